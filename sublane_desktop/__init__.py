"""SubLane Desktop: pool LLM subscription accounts behind one localhost endpoint."""

__version__ = "0.1.0"

"""One module per upstream: build its request, read its usage and rate-limit signals."""

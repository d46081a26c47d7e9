"""A stand-in for macOS's `security` command, for the Keychain seam on Linux (R-LOGIN-3).

It speaks the subset SubLane uses, as the real one answers it: `find-generic-password -s S -w`
prints the item's password (exit 44 and the real words when there is none),
`find-generic-password -s S` prints the item's attributes (`"acct"<blob>="…"`), and `-i` reads
commands from stdin, of which `add-generic-password -U -a A -s S -X HEX` updates an item. Items
live in the JSON file FAKE_SECURITY_STORE; every argv is appended to FAKE_SECURITY_LOG so a test
can check that no token ever went through a command line. FAKE_SECURITY_DENY makes every call
fail as a refused access does.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

MISSING = (
    "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain."
)


def load(store: Path) -> dict:
    return json.loads(store.read_text()) if store.exists() else {}


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def run(args: list[str], store: Path) -> int:
    items = load(store)
    if args and args[0] == "find-generic-password":
        item = items.get(option(args, "-s") or "")
        if item is None:
            print(MISSING, file=sys.stderr)
            return 44
        if "-w" in args:
            print(item["password"])
        else:
            print('keychain: "/Users/me/Library/Keychains/login.keychain-db"')
            print("attributes:")
            print(f'    "acct"<blob>="{item["account"]}"')
            print(f'    "svce"<blob>="{args[args.index("-s") + 1]}"')
        return 0
    if args and args[0] == "add-generic-password":
        service, account = option(args, "-s"), option(args, "-a")
        hex_value = option(args, "-X")
        value = bytes.fromhex(hex_value).decode() if hex_value else option(args, "-w")
        if service in items and "-U" not in args:
            print("security: The specified item already exists in the keychain.", file=sys.stderr)
            return 45
        items[service or ""] = {"account": account, "password": value}
        store.write_text(json.dumps(items))
        return 0
    print(f"security: unknown command {args[:1]}", file=sys.stderr)
    return 1


def main() -> int:
    store = Path(os.environ["FAKE_SECURITY_STORE"])
    with open(os.environ["FAKE_SECURITY_LOG"], "a") as log:
        log.write(json.dumps(sys.argv[1:]) + "\n")
    if os.environ.get("FAKE_SECURITY_DENY"):
        print("security: User interaction is not allowed.", file=sys.stderr)
        return 36
    if sys.argv[1:] == ["-i"]:
        status = 0
        for line in sys.stdin:
            if line.strip():
                status = run(shlex.split(line), store) or status
        return status
    return run(sys.argv[1:], store)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check a vt Decision Ledger without vt (the rules: docs/ledger.md); standard library only.
Exit 0: every line verifies; 1: each problem printed as `LEDGER:LINE: reason`; 2: unreadable.
`LEDGER N`: line N's signed message and signature to N.msg, N.sig for ssh-keygen -Y verify."""
import hashlib, json, sys, textwrap  # noqa: E401

GENESIS = "0" * 64  # the `prev` of line 1
NOT_IN_ID = {"id", "seq", "prev", "hash", "ts", "sig"}  # what the decision's id leaves out
CANONICAL = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False}

def sha(ev: dict, leave_out: set[str]) -> str:
    text = json.dumps({k: v for k, v in ev.items() if k not in leave_out}, **CANONICAL)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

def problems(lines: list[bytes]):  # yields (line number, reason) for every problem
    seq, prev, claim_of = 0, GENESIS, {}  # each id seen (str: ids may be forged) -> claim
    for n, raw in enumerate(lines, 1):
        if raw.endswith(b"\r"):
            yield n, "CRLF line ending (the line endings were converted)"
            raw = raw[:-1]
        try:
            ev = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            ev = (f"not valid JSON ({exc})",)  # a tuple: json.loads never returns one
        if not isinstance(ev, dict):
            yield n, ev[0] if isinstance(ev, tuple) else "not a JSON object"
            seq, prev = seq + 1, None  # the next line's prev cannot be checked
            continue
        got, named = ev.get("seq"), ev.get("supersedes")
        checks = [(json.dumps(ev, **CANONICAL) == raw.decode(), "not canonical JSON"),
                  (type(got) is int and got == seq + 1, f"seq {seq + 1} expected, found {got}"),
                  (prev in (None, ev.get("prev")), f"prev is not the hash of line {n - 1}"),
                  (ev.get("hash") == sha(ev, {"hash"}), "hash mismatch (edited line?)"),
                  (ev.get("id") == sha(ev, NOT_IN_ID), "id mismatch (edited decision?)"),
                  (str(ev.get("id")) not in claim_of, f"duplicate id {ev.get('id')}"),
                  (not isinstance(named, list) or len(named) > 1 and named == sorted(set(
                      map(str, named))), "supersedes is not a sorted list of 2 or more ids")]
        for target in [*(named if isinstance(named, list) else [named]), ev.get("reverts")]:
            checks.append((target is None or claim_of.get(str(target)) == ev.get("claim_id"),
                           f"{target} is not an earlier event of the same claim"))
        yield from ((n, reason) for ok, reason in checks if not ok)
        seq = got if type(got) is int else seq + 1
        prev, claim_of[str(ev.get("id"))] = ev.get("hash"), ev.get("claim_id")

if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) in (2, 3) else sys.exit("usage: verify_ledger.py LEDGER [N]")
    try:
        with open(path, "rb") as f:
            *lines, tail = f.read().split(b"\n")
    except OSError as exc:
        sys.exit(print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr) or 2)
    if len(sys.argv) == 3:  # a signature is checked by ssh-keygen, against the allowed signers
        n, ev = sys.argv[2], json.loads(lines[int(sys.argv[2]) - 1])
        open(f"{n}.msg", "w").write(json.dumps({"id": ev["id"], "ts": ev["ts"]}, **CANONICAL))
        open(f"{n}.sig", "w").write(f"-----BEGIN SSH SIGNATURE-----\n{textwrap.fill(ev['sig'], 70)}\n-----END SSH SIGNATURE-----\n")
        sys.exit(print(f"ssh-keygen -Y verify -f allowed_signers -I '{ev['actor']}' -n vt-decision@vault_tools -s {n}.sig < {n}.msg"))
    if tail:  # no final newline: an interrupted write, as vt reports it, not a failure
        print(f"{path}:{len(lines) + 1}: torn last line, not checked", file=sys.stderr)
    found = "\n".join(f"{path}:{n}: {reason}" for n, reason in problems(lines))
    sys.exit(found or print(f"{path}: {len(lines)} events verify"))  # text: stderr, exit 1

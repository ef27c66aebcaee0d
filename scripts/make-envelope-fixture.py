#!/usr/bin/env python3
"""Generates shared/fixtures/push/envelope-v1.json with an implementation independent of ours
(Python's `cryptography` AES-GCM and `json` canonicalisation), so the Swift tests check the
Swift code against a second implementation rather than against itself.

    pip install cryptography && python3 scripts/make-envelope-fixture.py
"""
import base64
import json
import pathlib

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

key = bytes(range(32))
nonce = bytes(range(12))
aad = b"hapi-push-v1"
payload = {
    "type": "ready",
    "sessionId": "s1",
    "title": "HAPI",
    "body": "Ready for input",
    "contractVersion": "1",
}
# ASCII keys: Python's sort_keys order equals JavaScript's UTF-16 order here.
plaintext = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
sealed = nonce + AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), aad)

fixture = {
    "key_hex": key.hex(),
    "nonce_hex": nonce.hex(),
    "aad": aad.decode("ascii"),
    "plaintext": plaintext,
    "envelope_b64": base64.b64encode(sealed).decode("ascii"),
}
out = pathlib.Path(__file__).resolve().parent.parent / "shared/fixtures/push/envelope-v1.json"
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(fixture, indent=2) + "\n")
print(out)

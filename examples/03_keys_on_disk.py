"""Serialization: a client keeps the secret key, a server gets the evaluation keys and ciphertexts as bytes.

Seeded switching keys store only a 32-byte seed for their uniform half, so the relinearization key is
about half the size it would be otherwise (MAD's key compression).
"""
import os

import numpy as np

import ember

log_n = int(os.environ.get("EMBER_EXAMPLE_LOG_N", "16"))
params = ember.CkksParams(log_n=log_n, levels=24 if log_n >= 16 else 6, log_scale=50 if log_n >= 16 else 40, dnum=3,
                          insecure=log_n < 16)

# client
client = ember.Context(params, threads=2)
keys = client.keygen(rotations=[1])
x = np.random.default_rng(1).uniform(-1, 1, client.slots)
wire = {"relin": keys.relin.to_bytes(), "galois": keys.galois.to_bytes(),
        "ct": client.encrypt(x, keys.public).to_bytes()}
print({k: f"{len(v) / 2**20:.1f} MiB" for k, v in wire.items()})

# server: same parameters, no secret key
server = ember.Context(params, threads=2)
server.set_eval_keys(relin=ember.SwitchingKey.from_bytes(server, wire["relin"]),
                     galois=ember.GaloisKeys.from_bytes(server, wire["galois"]))
ct = ember.Ciphertext.from_bytes(server, wire["ct"])
reply = (ct * ct).rotate(1).to_bytes()

# client
y = client.decrypt(ember.Ciphertext.from_bytes(client, reply), keys.secret).real
err = np.abs(y - np.roll(x * x, -1)).max()
print(f"round trip through bytes: max error {err:.1e}")
assert err < 1e-6

"""SipHash-2-4 of 64-bit numbers, vectorized: exactly what pandas gives for
``pd.util.hash_pandas_object(pd.Series(values.view("S8")), index=False, hash_key=key)`` (each number's 8
little-endian bytes with numpy's trailing zero bytes dropped, SipHash-2-4 under the 16-byte key, then pandas'
64-bit mix), without a Python bytes object per number and each distinct number once: several times faster
(``tests/test_siphash.py`` holds it equal to pandas)."""

from __future__ import annotations

import numpy as np
import pandas as pd

_U = np.uint64


def _rotl(x: np.ndarray, b: int, tmp: np.ndarray) -> None:
    """``x`` rotated left by ``b`` bits, in place (``tmp``: scratch of x's size)."""
    np.right_shift(x, _U(64 - b), out=tmp)
    np.left_shift(x, _U(b), out=x)
    x |= tmp


def _rounds(v: list[np.ndarray], n: int) -> None:
    """``n`` SipRounds over the state ``v``, in place (no array allocated per operation)."""
    v0, v1, v2, v3 = v
    tmp = np.empty_like(v0)
    for _ in range(n):
        v0 += v1
        _rotl(v1, 13, tmp)
        v1 ^= v0
        _rotl(v0, 32, tmp)
        v2 += v3
        _rotl(v3, 16, tmp)
        v3 ^= v2
        v0 += v3
        _rotl(v3, 21, tmp)
        v3 ^= v0
        v2 += v1
        _rotl(v1, 17, tmp)
        v1 ^= v2
        _rotl(v2, 32, tmp)


def _siphash(values: np.ndarray, key: bytes) -> np.ndarray:
    """SipHash-2-4 of each number's significant little-endian bytes (1 to 8; none for zero)."""
    k0, k1 = (_U(int.from_bytes(key[i:i + 8], "little")) for i in (0, 8))
    n = values.size
    v = [np.full(n, k0 ^ _U(0x736F6D6570736575)), np.full(n, k1 ^ _U(0x646F72616E646F6D)),
         np.full(n, k0 ^ _U(0x6C7967656E657261)), np.full(n, k1 ^ _U(0x7465646279746573))]
    length = np.zeros(n, dtype=_U)
    for j in range(8):
        length += (values >> _U(8 * j)) != 0
    full = length == 8
    if full.any():  # one whole block: the number itself, for the numbers that need all 8 bytes
        m = np.where(full, values, _U(0))
        keep = [x.copy() for x in v]
        v[3] ^= m
        _rounds(v, 2)
        v[0] ^= m
        v = [np.where(full, a, b) for a, b in zip(v, keep, strict=True)]
    last = (length << _U(56)) | np.where(full, _U(0), values)  # the length byte, and the bytes left over
    v[3] ^= last
    _rounds(v, 2)
    v[0] ^= last
    v[2] ^= _U(0xFF)
    _rounds(v, 4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def keyed_hashes(values: np.ndarray, hash_key: str) -> np.ndarray:
    """pandas' keyed hash of each 64-bit number (any 64-bit dtype, read as its bytes), as uint64."""
    key = hash_key.encode("utf8")
    if len(key) != 16:
        raise ValueError(f"a hash key is 16 bytes in UTF-8, not {len(key)}")  # the key itself never in a message
    numbers = np.ascontiguousarray(values).view(_U).ravel()
    codes, distinct = pd.factorize(numbers)  # each distinct number hashed once (a release repeats its rows)
    with np.errstate(over="ignore"):
        out = _siphash(np.asarray(distinct, dtype=_U), key)
        out ^= out >> _U(30)  # pandas' mix of the 64-bit values (pandas.core.util.hashing._hash_ndarray)
        out *= _U(0xBF58476D1CE4E5B9)
        out ^= out >> _U(27)
        out *= _U(0x94D049BB133111EB)
        out ^= out >> _U(31)
    return out[codes]

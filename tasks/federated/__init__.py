"""Naive Bayes over horizontally partitioned parties, summed through two semi-trusted mixers (paper 001,
Information Sciences 180 (2010), section 3.2, "Multi-party privacy-preserving naive Bayes classifier"; the
paper names the semi-trusted mixer model but gives no protocol: this module is one).

Protocol
--------
``n >= 2`` parties hold rows of the same columns ``(A_1..A_m, C)``. The spec (:class:`FederateSpec`) declares the
class domain and every attribute's domain (or bin edges), which fixes one count vector layout for everybody:
the class counts ``N_c``, then for each attribute ``j`` the counts ``N_{c,j,v}`` of every (class, value) pair, all
cells present whether or not a party holds the value (so a party's vector's shape reveals nothing).

1. Each party counts its own rows into that vector ``x_i`` (:func:`party_shares`) and splits it into two
   additive shares modulo 2**64: ``a_i`` uniform from the operating system's CSPRNG (:func:`secrets.token_bytes`),
   ``b_i = x_i - a_i mod 2**64`` (:func:`split_shares`). It sends ``a_i`` to mixer A and ``b_i`` to mixer B.
2. Each mixer adds what it receives modulo 2**64 (:func:`mixer_sum`): ``S_A = sum a_i``, ``S_B = sum b_i``.
3. The publisher adds the two sums modulo 2**64 (:func:`combine`): ``S_A + S_B = sum x_i``, the counts of the
   union of the rows, checked for consistency (every (class, attribute) row adds up to its class count).
4. The minimum-count rule (:func:`apply_min_count`) suppresses (with complementary cells, checked by the LP
   audit :func:`audit_suppression`) or refuses counts in ``[1, k)``; the result is the model, published like any
   release (:func:`publish_model`). :class:`FederatedModel` predicts from it: naive
   Bayes with Laplace correction (alpha = 1), the same arithmetic as scikit-learn's ``CategoricalNB(alpha=1)``.

Threat model
------------
* Parties are semi-honest (they follow the protocol, and may try to learn more from what they see); the two
  mixers are semi-honest and do NOT collude with each other. A party sees only its own vector.
* A single mixer sees ``n`` vectors, each uniform on ``[0, 2**64)^cells`` and independent of the counts (a
  one-time pad over the group Z_(2**64)), and their sum, also uniform: it learns nothing but ``n``. Any
  coalition that holds one share of each party (one mixer, with any parties) learns nothing either. The two
  mixers together learn every party's counts: they must not collude.
* The released model is the total counts. Any ``n - 1`` colluding parties subtract their own counts from it and
  get the last party's counts, exactly: the protocol hides the parties' inputs, not what the output implies.
  That is why a party holding fewer than ``min_count.k`` rows does not take part (:class:`PartyTooSmall`): its
  counts would be learnt as such. A party of many rows can still have small cells; its cell counts are as
  exposed to the other ``n - 1`` parties as the output's. The minimum-count rule then keeps every published
  count at 0 or at least ``k``, and suppresses complementary cells so that every suppressed count's feasible
  range, from the published table and totals, reaches from 0 to ``k - 1``, even for an attacker who knows the
  rule and which suppressed counts are the small ones (:func:`apply_min_count`, :func:`audit_suppression`; the
  total number of rows is not published).
* The publisher (the process that adds the two mixer sums and applies the rule) sees the unsuppressed total
  counts: it is trusted like the release process is. In this single-process orchestration the flow also
  carries each party's two shares to their mixers; in a deployment each party sends each share over its own
  channel, and no process but the party holds both.
* The manifest names each party's file by its SHA-256: whoever can enumerate a tiny party's possible files can
  test them against it (a party-held key, HMAC, would hide it; not done here).
* Shares are never derived from the spec's seed: a seed a mixer knows would let it recompute ``a_i``.

Nothing in this module imports Prefect; messages name parties, files, columns (by position and name) and spec
keys, never a data value nor a count.

Package layout
--------------
* :mod:`~ppdp.tasks.federated.protocol`: what the parties, the mixers and the publisher exchange (the count
  vector's layout, a party's shares, the mixers' sums and their combination);
* :mod:`~ppdp.tasks.federated.model`: the model as published (the counts with their suppression flags, as a
  table) and :class:`FederatedModel`, the naive Bayes classifier on them;
* :mod:`~ppdp.tasks.federated.suppression`: the minimum-count rule and its suppression audit;
* :mod:`~ppdp.tasks.federated.release`: what the flow calls around them (the spec, the manifest, the crash-safe
  publish, the re-check of a published model).

Every public name is importable from this package.
"""

from __future__ import annotations

from ppdp.tasks.federated.model import (
    COLUMNS,
    FederatedModel,
    Suppressed,
    counts_from_table,
    model_table,
)
from ppdp.tasks.federated.protocol import (
    MIXERS,
    PROTOCOL,
    InconsistentSums,
    Layout,
    MixerUnavailable,
    PartyShares,
    PartyTooSmall,
    combine,
    count_codes,
    count_frame,
    encode_frame,
    layout_of,
    mixer_sum,
    party_of,
    party_shares,
    read_party,
    split_shares,
)
from ppdp.tasks.federated.release import (
    KIND,
    MODEL_SCHEMA,
    ModelCheck,
    build_manifest,
    inputs_sha256,
    load_spec,
    manifest_sha256,
    party_records,
    preflight,
    publish_model,
    recheck_model,
    resolve_paths,
    spec_sha256,
    stage_model,
)
from ppdp.tasks.federated.suppression import (
    ATTACKERS,
    SuppressionFinding,
    apply_min_count,
    audit_suppression,
)

__all__ = [
    "ATTACKERS",
    "COLUMNS",
    "FederatedModel",
    "InconsistentSums",
    "KIND",
    "Layout",
    "MIXERS",
    "MODEL_SCHEMA",
    "MixerUnavailable",
    "ModelCheck",
    "PROTOCOL",
    "PartyShares",
    "PartyTooSmall",
    "Suppressed",
    "SuppressionFinding",
    "apply_min_count",
    "audit_suppression",
    "build_manifest",
    "combine",
    "count_codes",
    "count_frame",
    "counts_from_table",
    "encode_frame",
    "inputs_sha256",
    "layout_of",
    "party_records",
    "load_spec",
    "manifest_sha256",
    "mixer_sum",
    "model_table",
    "party_of",
    "party_shares",
    "preflight",
    "publish_model",
    "read_party",
    "recheck_model",
    "resolve_paths",
    "spec_sha256",
    "split_shares",
    "stage_model",
]

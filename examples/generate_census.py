"""Generate the demo table: a census-like, entirely synthetic population (seeded, offline, deterministic).

    python examples/generate_census.py [--rows 3000] [--seed 20261125] [--out examples/data/census_demo.csv]

Columns: person_id and name (direct identifiers), age, sex, zip, race, marital_status, education, occupation
(quasi-identifiers), hours_per_week, and income (class label, ">50K" an imbalanced minority of about 20%).
Nobody in it exists: names are drawn from short lists, everything else from simple seeded models.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

FIRST = ["Alex", "Sam", "Maria", "John", "Wei", "Fatima", "Olga", "Luis", "Aisha", "Tom", "Nina", "Omar",
         "Grace", "Ivan", "Lena", "Raj", "Sara", "Ken", "Ana", "Paul"]
LAST = ["Smith", "Garcia", "Chen", "Novak", "Khan", "Silva", "Brown", "Kowalski", "Okafor", "Muller",
        "Rossi", "Tanaka", "Dubois", "Jensen", "Haddad", "Petrov", "Lopez", "Nguyen", "Cohen", "Walsh"]
EDUCATION = ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors", "Masters",
             "Doctorate"]
OCCUPATION = ["Admin", "Craft", "Exec", "Farming", "Handlers", "Machine-op", "Prof", "Sales", "Service",
              "Tech", "Transport"]
MARITAL = ["Never-married", "Married", "Divorced", "Separated", "Widowed"]
RACE = ["White", "Black", "Asian", "Amer-Indian", "Other"]
ZIPS = [f"{z:05d}" for z in (2134, 2138, 2139, 2141, 2143, 2144, 2145, 2148, 2149, 2150, 2151, 2152, 2155,
                              2163, 2169, 2170, 2171, 2176, 2180, 2184)]


def generate(rows: int = 3000, seed: int = 20261125) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = np.clip(rng.gamma(6.0, 6.5, rows) + 17, 17, 90).astype(int)
    sex = rng.choice(["Female", "Male"], rows, p=[0.48, 0.52])
    race = rng.choice(RACE, rows, p=[0.72, 0.12, 0.09, 0.02, 0.05])
    edu_rank = np.clip(np.rint(rng.normal(4.2, 1.6, rows) + (age > 25) * 0.4), 0, len(EDUCATION) - 1).astype(int)
    education = np.array(EDUCATION)[edu_rank]
    married_p = np.clip((age - 18) / 40, 0.05, 0.65)
    u = rng.random(rows)
    marital = np.where(u < married_p, "Married",
                       rng.choice(MARITAL, rows, p=[0.55, 0.0, 0.25, 0.08, 0.12]))
    marital = np.where((age < 24) & (rng.random(rows) < 0.8), "Never-married", marital)
    occ_bias = np.clip(edu_rank - 2, 0, None)
    occ_idx = (rng.integers(0, len(OCCUPATION), rows) + (occ_bias > 3) * rng.integers(0, 3, rows)) % len(OCCUPATION)
    occupation = np.array(OCCUPATION)[occ_idx]
    hours = np.clip(np.rint(rng.normal(40, 11, rows)), 5, 99).astype(int)
    zips = rng.choice(ZIPS, rows)
    logit = (-8.8 + 0.045 * np.minimum(age, 60) + 0.55 * edu_rank + 0.035 * hours
             + 0.9 * (marital == "Married") + 0.35 * (sex == "Male")
             + 0.7 * np.isin(occupation, ["Exec", "Prof", "Tech"]))
    income = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
    names = [f"{FIRST[a]} {LAST[b]}" for a, b in zip(rng.integers(0, len(FIRST), rows),
                                                      rng.integers(0, len(LAST), rows))]
    return pd.DataFrame({
        "person_id": [f"P{100000 + i}" for i in rng.permutation(rows)],
        "name": names,
        "age": age,
        "sex": sex,
        "zip": zips,
        "race": race,
        "marital_status": marital,
        "education": education,
        "occupation": occupation,
        "hours_per_week": hours,
        "income": income,
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "census_demo.csv")
    args = parser.parse_args()
    frame = generate(args.rows, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    share = (frame["income"] == ">50K").mean()
    print(f"wrote {args.out}: {len(frame)} rows, >50K share {share:.1%}")


if __name__ == "__main__":
    main()

"""Generate the federation demo: three clinics' tables of the same columns, entirely synthetic (seeded, offline,
deterministic).

    python examples/federated/generate_federated.py [--seed 20261126] [--out examples/federated]

Columns: age (a number: the spec bins it), sex, smoker, exercise, region, and risk (the class: low or high).
Each clinic draws from its own mix (one sees older patients, one more smokers), so no clinic alone looks like the
union: the federated model is learnt from all three. Nobody in them exists.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

CLINICS = {  # name: (rows, mean age, smoker share, region weights north/south/east/west)
    "north_clinic": (420, 44.0, 0.22, [0.70, 0.10, 0.10, 0.10]),
    "south_clinic": (310, 57.0, 0.18, [0.10, 0.65, 0.15, 0.10]),
    "city_hospital": (260, 39.0, 0.35, [0.20, 0.20, 0.35, 0.25]),
}
SEX = ["F", "M"]
SMOKER = ["no", "yes"]
EXERCISE = ["none", "weekly", "daily"]
REGION = ["north", "south", "east", "west"]
RISK = ["low", "high"]


def generate_clinic(rows: int, mean_age: float, smokers: float, regions: list[float],
                    rng: np.random.Generator) -> pd.DataFrame:
    """One clinic's rows: age, sex, smoker, exercise, region and a risk class that depends on them."""
    age = np.clip(np.rint(rng.normal(mean_age, 13.0, rows)), 18, 89).astype(int)
    sex = rng.choice(SEX, rows)
    smoker = np.where(rng.random(rows) < smokers, "yes", "no")
    exercise = rng.choice(EXERCISE, rows, p=[0.35, 0.45, 0.20])
    region = rng.choice(REGION, rows, p=regions)
    logit = (-3.3 + 0.055 * (age - 18) + 1.1 * (smoker == "yes") - 0.8 * (exercise == "daily")
             - 0.3 * (exercise == "weekly") + 0.25 * (sex == "M"))
    risk = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), "high", "low")
    return pd.DataFrame({"age": age, "sex": sex, "smoker": smoker, "exercise": exercise, "region": region,
                         "risk": risk})


def generate(seed: int = 20261126, scale: float = 1.0) -> dict[str, pd.DataFrame]:
    """Every clinic's table (``scale`` multiplies the row counts), from one seed."""
    rng = np.random.default_rng(seed)
    return {name: generate_clinic(max(1, int(rows * scale)), age, smokers, regions, rng)
            for name, (rows, age, smokers, regions) in CLINICS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame in generate(args.seed).items():
        path = args.out / f"{name}.csv"
        frame.to_csv(path, index=False)
        print(f"wrote {path}: {len(frame)} rows, high risk {(frame['risk'] == 'high').mean():.1%}")


if __name__ == "__main__":
    main()

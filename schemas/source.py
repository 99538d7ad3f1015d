"""Where a table comes from: the spec's ``source`` section (apart from :mod:`ppdp.schemas.spec`, whose method
union imports every sanitizer, so that reading a table imports no method)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ppdp.schemas.base import StrictModel


class SourceSpec(StrictModel):
    """The input table: a CSV or Parquet file, and how to read it."""

    path: Path = Field(..., description="the input file, or a folder of Parquet files (a partitioned table, read "
                                        "recursively; released on Dask partition by partition); a relative path "
                                        "resolves against the spec file's folder")
    format: Literal["csv", "parquet"] | None = Field(None, description="inferred from the file suffix when absent")
    na_values: list[str] = Field(default_factory=list, description="CSV cells read as missing")
    sep: str = Field(",", min_length=1, max_length=1, description="CSV field separator (one character)")
    encoding: str = Field("utf8", description="text encoding of a CSV file (a Python codec name, e.g. utf8, latin-1)")
    obtain: str | None = Field(None, min_length=1, max_length=1000,
                               description="where to get the input when it is not shipped (free text: its public "
                                           "source); printed after a \"file not found\" refusal")

    @model_validator(mode="after")
    def _infer_format(self) -> SourceSpec:
        if self.format is None:
            # a folder (a partitioned table; a name without a suffix, as it may not be resolved yet) holds Parquet
            folder = self.path.is_dir() or (not self.path.suffix and not self.path.is_file())
            self.__dict__["format"] = "parquet" if folder else format_from_suffix(self.path)
            if self.format is None:
                raise ValueError(f"cannot infer the format of '{self.path.name}': set source.format")
        return self


    @property
    def partitioned(self) -> bool:
        """The input is a folder of Parquet files (a partitioned table) rather than one file."""
        return self.path.is_dir()


def format_from_suffix(path: Path) -> str | None:
    """A table file's format from its suffix: csv (.csv, .txt, .data), parquet (.parquet, .pq), else None."""
    suffix = path.suffix.lower()
    return "csv" if suffix in (".csv", ".txt", ".data") else "parquet" if suffix in (".parquet", ".pq") else None

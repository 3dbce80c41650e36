"""Arrow tables and Parquet files in and out (the optional extra ``crawleval[arrow]``: pyarrow),
through the DataFrame readers and writers, so that every check is the DataFrame path's."""

from __future__ import annotations

from typing import Any


def pyarrow() -> Any:
    try:
        import pyarrow as pa  # type: ignore
        import pyarrow.parquet  # noqa: F401  (pa.parquet below)
    except ImportError as e:
        raise ImportError(
            "Arrow tables and Parquet files need pyarrow: pip install 'crawleval[arrow]' (or "
            "pip install pyarrow)"
        ) from e
    return pa


def table_to_dataframe(table: Any) -> Any:
    pa = pyarrow()
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow.Table, got {type(table).__name__}")
    return table.to_pandas()


def read_parquet(path: str) -> Any:
    return pyarrow().parquet.read_table(str(path)).to_pandas()


def dataframe_to_table(df: Any, index: bool = False) -> Any:
    pa = pyarrow()
    if index:
        df = df.reset_index()
    return pa.Table.from_pandas(df, preserve_index=False)


def write_parquet(df: Any, path: str, index: bool = False) -> None:
    pyarrow().parquet.write_table(dataframe_to_table(df, index), str(path))


class ArrowColumns:
    """Arrow and Parquet for a population class that has ``from_dataframe(df, origin=)`` and
    ``to_dataframe()``: the same four methods for both models' populations."""

    @classmethod
    def from_arrow(cls, table: Any, origin: str = "Arrow table") -> Any:
        """A population from a pyarrow Table with the DataFrame's columns (needs pyarrow)."""
        return cls.from_dataframe(table_to_dataframe(table), origin=origin)  # type: ignore

    @classmethod
    def read_parquet(cls, path: str) -> Any:
        """A population from a Parquet file with the DataFrame's columns (needs pyarrow)."""
        return cls.from_dataframe(read_parquet(path), origin=str(path))  # type: ignore

    def to_arrow(self) -> Any:
        """Every column as a pyarrow Table (needs pyarrow)."""
        return dataframe_to_table(self.to_dataframe())  # type: ignore

    def write_parquet(self, path: str) -> None:
        """Writes every column as a Parquet file (needs pyarrow)."""
        write_parquet(self.to_dataframe(), path)  # type: ignore

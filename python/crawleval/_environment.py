"""What the package sets up before the engine loads, and what it checks about how it was started.

Imported by ``crawleval/__init__.py`` before ``_core``: libgomp reads ``OMP_WAIT_POLICY`` once,
when it is loaded, so it has to be in the environment before the extension is imported.
"""

from __future__ import annotations

import os
import warnings
from typing import Optional

#: The variables an MPI launcher sets (Open MPI, PMIx, MPICH's PMI): the CLI's list
#: (host/base/comm.cpp, launched_by_mpi), with the size where the launcher gives one.
_MPI_RANK_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE")
_MPI_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS")
_MPI_RANK_OF = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def set_wait_policy() -> bool:
    """Idle OpenMP threads wait passively unless the user chose otherwise, as the CLI does
    (host/cli/main.cpp): spinning threads at every epoch's barrier made a numpy policy 2.6x
    slower on a machine where another process keeps a core busy. Returns whether it set it."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return False
    os.environ["OMP_WAIT_POLICY"] = "passive"
    return True


def mpi_launch() -> Optional[int]:
    """The number of processes when started by an MPI launcher (0 when it does not say how
    many), or None when not."""
    if not any(v in os.environ for v in _MPI_RANK_VARIABLES):
        return None
    for v in _MPI_SIZE_VARIABLES:
        try:
            return int(os.environ[v])
        except (KeyError, ValueError):
            continue
    return 0


def mpi_rank() -> int:
    for v in _MPI_RANK_OF:
        try:
            return int(os.environ[v])
        except (KeyError, ValueError):
            continue
    return 0


def warn_if_mpi() -> None:
    """The package runs every evaluation in one process: under mpirun each rank would repeat the
    whole run. Said once, by rank 0, instead of silently doing it P times."""
    size = mpi_launch()
    if size is None or size == 1 or mpi_rank() != 0:
        return
    ranks = f"{size} processes" if size else "several processes"
    warnings.warn(
        f"crawleval: started by an MPI launcher ({ranks}), but the Python package has no MPI "
        f"support: every process runs the whole evaluation by itself. To shard one evaluation "
        f"over the processes, run the command line: mpirun -np P crawleval run ...",
        RuntimeWarning,
        stacklevel=3,
    )

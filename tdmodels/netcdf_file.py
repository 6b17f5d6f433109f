"""netCDF files written whole or not at all, a full disk included.

HDF5 (under h5netcdf) writes a file in place as it goes; when the disk fills, it reports the error and then,
at interpreter exit, crashes closing the half-written file (a segmentation fault after the right message).
Here the file is serialised in memory first and written with plain file I/O inside ``atomic_save``: a full
disk is an OSError naming the file, the old file is kept, and nothing of HDF5's is left open.
"""
from __future__ import annotations

import io
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import xarray as xr

from tdmodels.atomic_file import atomic_save


def _zlib(ds) -> dict:
    """zlib compression for every numeric variable of a Dataset (text and objects are stored as they are)."""
    return {name: {"zlib": True} for name, v in ds.variables.items() if np.dtype(v.dtype).kind in "biufc"}


@contextmanager
def _local_locks():
    """xarray takes its write lock from dask's current scheduler: in a process with a distributed Client (a Dask
    sweep's or validation's), a cluster-wide lock named after the target, which a BytesIO cannot name. Writing
    to memory needs no lock beyond this thread's."""
    try:
        import dask
    except ImportError:
        yield
        return
    with dask.config.set(scheduler="synchronous"):
        yield


def dataset_bytes(ds, encoding: dict | None = None) -> bytes:
    """An xarray Dataset as the bytes of a netCDF-4 (h5netcdf) file."""
    buf = io.BytesIO()
    with _local_locks():
        ds.to_netcdf(buf, engine="h5netcdf", encoding=encoding)
    return buf.getvalue()


def inference_data_bytes(idata) -> bytes:
    """An ArviZ InferenceData as the bytes of the netCDF-4 file ``az.from_netcdf`` reads: its attributes at
    the root, one group per group, numeric variables compressed."""
    buf = io.BytesIO()
    mode = "w"
    with _local_locks():
        if idata.attrs or not idata.groups():
            xr.Dataset(attrs=dict(idata.attrs)).to_netcdf(buf, mode=mode, engine="h5netcdf")
            mode = "a"
        for group in idata.groups():
            ds = getattr(idata, group)
            ds.to_netcdf(buf, mode=mode, group=group, engine="h5netcdf", encoding=_zlib(ds))
            mode = "a"
    return buf.getvalue()


def save_netcdf(path: str | os.PathLike, data: bytes) -> Path:
    """Write netCDF bytes (``dataset_bytes``, ``inference_data_bytes``) atomically to `path`."""
    return atomic_save(path, lambda tmp: Path(tmp).write_bytes(data))


__all__ = ["dataset_bytes", "inference_data_bytes", "save_netcdf"]

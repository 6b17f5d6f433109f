"""netCDF bytes written in memory work in a process connected to a Dask cluster started on its own."""
import socket
import subprocess
import sys
import time

import numpy as np
import xarray as xr

from tdmodels.netcdf_file import dataset_bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bytes_are_written_beside_a_distributed_client():
    """With a Client connected to a scheduler started separately, xarray's writer took the cluster's lock named
    after the target, and a BytesIO is no name the scheduler knows: 'Semaphore or Lock ... not known'."""
    from distributed import Client

    port = _free_port()
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                              "--port", str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                client = Client(f"tcp://127.0.0.1:{port}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the scheduler did not start"
                time.sleep(0.5)
        with client:
            data = dataset_bytes(xr.Dataset({"a": ("x", np.arange(3.0))}))
        assert data[:4] == b"\x89HDF"
    finally:
        sched.terminate()
        sched.wait(30)

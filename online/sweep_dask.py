"""The Dask executor of a sweep: cells as tasks on a LocalCluster this sweep starts or on a cluster it
joins; results come back to the client, the only store writer."""
from __future__ import annotations

import time
from pathlib import Path

from online.sweep_cell import compute_cell, warm_up
from online.sweep_plan import Cell, SweepError

DASK_RETRIES = 0                 # the scheduler's own reruns of a lost task on our LocalCluster (we rerun it alone)
DASK_CONNECT_S = 10
NO_WORKERS_S = 120               # a Dask cluster without workers this long fails the cells left
HEAL_S = 5                       # our LocalCluster without workers this long gets fresh ones


def connect_client(address, error=SweepError):
    """A distributed Client of the scheduler at `address` (or of a LocalCluster), or `error` naming the address
    within DASK_CONNECT_S seconds or so. The client's own timeout bounds only the TCP connect: a server that
    accepts and never answers had left the command waiting forever, and one that answers garbage had raised
    from distributed's frame reader (a multi-exabyte MemoryError among others). So the connection, its
    handshake and the client's first exchange run in a thread this process waits on for a bounded time, and
    whatever they raise is one error naming the address."""
    import asyncio
    import threading

    import dask
    from distributed import Client

    where = address if isinstance(address, str) else "the local cluster"
    made: dict = {}

    async def handshake():
        from distributed.comm import connect as open_comm

        comm = await open_comm(address, timeout=DASK_CONNECT_S)
        if not isinstance(comm.remote_info, dict) or "compression" not in comm.remote_info:
            raise ValueError(f"its handshake is not a Dask server's ({str(comm.remote_info)[:80]})")
        await comm.close()

    def connect():
        try:
            if isinstance(address, str):          # a bare exchange first: a Client on garbage dies messily
                asyncio.run(asyncio.wait_for(handshake(), 2 * DASK_CONNECT_S))
            with dask.config.set({"distributed.comm.timeouts.connect": f"{DASK_CONNECT_S}s"}):
                made["client"] = Client(address, timeout=DASK_CONNECT_S, set_as_default=False)
        except BaseException as exc:     # noqa: BLE001 -- MemoryError, AssertionError...: garbage from a non-scheduler
            made["error"] = exc if not isinstance(exc, asyncio.TimeoutError) else TimeoutError(
                f"no Dask handshake within {2 * DASK_CONNECT_S:g} s")

    thread = threading.Thread(target=connect, name="dask-connect", daemon=True)
    thread.start()
    thread.join(3 * DASK_CONNECT_S)
    if thread.is_alive():
        raise error(f"the Dask scheduler at {where} did not answer within {3 * DASK_CONNECT_S:g} s (is it a Dask "
                    f"scheduler, e.g. started by `dask scheduler`?)")
    if "error" in made:
        exc = made["error"]
        raise error(f"cannot reach the Dask scheduler at {where}: {type(exc).__name__}: {str(exc)[:200]} (is it a "
                    f"Dask scheduler?)")
    return made["client"]


def run_on_dask(todo, sources, keep_clicks, finish, scheduler, n_workers, cell_timeout, should_stop):
    """Cells as Dask tasks; results come back to this process (the only store writer) as they finish.

    Each task carries its world's file bytes (decoded once per worker process), so no task depends on
    data a dying worker could take with it; at most two tasks per worker thread are in flight, which
    bounds the memory the scheduler holds. A worker that dies takes the blame for every task it held,
    so a cell that fails with KilledWorker is run again after the others, alone on the cluster: only a
    cell that kills its workers when it runs by itself fails for good."""
    import dask
    from distributed import LocalCluster

    cluster = None
    try:
        if scheduler is None:
            with dask.config.set({"distributed.scheduler.allowed-failures": DASK_RETRIES,
                                  "distributed.scheduler.worker-saturation": 1.0}):
                cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = connect_client(scheduler or cluster, SweepError)
        with client, client.as_current():    # distributed.wait finds its client here (none is made the default)
            client.run(warm_up)         # imports outside the cells' clocks (workers that restart later pay them in-cell)
            payloads = {d: Path(sources[d]).read_bytes() for d in {c.digest for c in todo}}

            def submit(c: Cell, attempt: int):
                return client.submit(compute_cell, (c.digest, payloads[c.digest]), c.digest, c.seed, c.policy,
                                     c.arrivals, keep_clicks, c.code, pure=False,
                                     key=f"cell-{c.digest}-{c.seed}-{c.policy}-{c.code}-{c.arrivals}-{attempt}")

            heal = (lambda: (cluster.scale(0), cluster.scale(n_workers))) if cluster is not None else None
            suspects = []
            _dask_gather(todo, lambda c: submit(c, 0), client, finish, cell_timeout, should_stop, suspects, heal)
            for c in suspects:
                _dask_gather([c], lambda c: submit(c, 1), client, finish, cell_timeout, should_stop, None, heal)
    finally:
        if cluster is not None:
            cluster.close()


def _dask_gather(cells, submit, client, finish, cell_timeout, should_stop, suspects, heal=None) -> None:
    """Run the cells, a bounded number in flight, finishing each as it ends; KilledWorker cells go to
    `suspects` if given. A cluster left without workers (a nanny gives up on a worker that dies while
    starting) is healed by `heal` if given (our LocalCluster: fresh workers); with no worker for
    NO_WORKERS_S, the cells left fail."""
    from distributed import wait as dask_wait

    queue, futs, started, idle_since, healed = list(cells)[::-1], {}, {}, None, False
    while queue or futs:
        if should_stop():
            client.cancel(list(futs))
            return
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        idle_since, healed = (None, False) if threads else (idle_since or time.monotonic(), healed)
        if idle_since is not None and heal is not None and not healed and time.monotonic() - idle_since > HEAL_S:
            heal()
            healed = True
        if idle_since is not None and time.monotonic() - idle_since > NO_WORKERS_S:
            client.cancel(list(futs))
            for c in list(futs.values()) + queue[::-1]:
                finish(c, "error", f"no Dask worker for {NO_WORKERS_S:g} s; the cell was not run")
            return
        while queue and len(futs) < 2 * max(threads, 1):
            c = queue.pop()
            futs[submit(c)] = c
        try:
            done, _ = dask_wait(list(futs), timeout=0.5, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        for fut in done:
            cell = futs.pop(fut)
            try:
                status, payload = fut.result()
            except Exception as exc:     # lost too often (KilledWorker), cancelled
                if suspects is not None and type(exc).__name__ == "KilledWorker":
                    suspects.append(cell)
                    continue
                status, payload = "error", _dask_failure(exc)
            finally:
                fut.release()
            finish(cell, status, payload)
        if cell_timeout is not None and futs:
            for fut in _stop_overdue(client, futs, started, cell_timeout, finish):
                futs.pop(fut)


def _dask_failure(exc: Exception) -> str:
    if type(exc).__name__ == "KilledWorker":
        return (f"its Dask task killed its worker each time it ran, alone on the cluster too (a policy that ends its "
                f"own process, a crash, or the memory killer): {exc}")
    return f"Dask task failed: {type(exc).__name__}: {exc}"


def _stop_overdue(client, futs, started, limit, finish) -> list:
    """Fail the cells running longer than `limit` seconds: cancel them and restart their workers."""
    now, over, restart = time.monotonic(), [], set()
    running = {key: addr for addr, keys in client.processing().items() for key in keys}
    for fut in futs:
        if fut.key in running:
            started.setdefault(fut.key, now)
            if now - started[fut.key] > limit:
                over.append(fut)
                restart.add(running[fut.key])
    if over:
        client.cancel(over)
        try:
            client.restart_workers(list(restart), raise_for_error=False)
        except Exception:     # a worker without a nanny cannot be restarted; its task is cancelled all the same
            pass
        for fut in over:
            finish(futs[fut], "error", f"exceeded the time limit of {limit:g} s (its Dask worker was restarted)")
    return over


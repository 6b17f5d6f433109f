"""`--scheduler` at something that is not a Dask scheduler: one clear error in bounded time, never a hang or
distributed's traceback."""
import socket
import threading
import time

import pytest

from tutorduel.cli import main


def _server(reply: bytes | None):
    """A TCP server on a free port that accepts, sends `reply` (or nothing) and keeps the connection open."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return sock, held


REPLAY = ["replay", "--world", "dev", "--seeds", "0", "--arrivals", "2", "--policies", "random"]
VALIDATE = ["validate", "--world", "dev", "--policy", "coduel", "--arrivals", "2", "--users", "1", "--chains", "2",
            "--warmup", "5", "--draws", "5", "--seeds", "0"]


@pytest.mark.parametrize("reply, command", [(None, REPLAY), (b"\xff" * 8 + b"garbage", REPLAY),
                                            (b"\x01" + b"\x00" * 15, REPLAY), (None, VALIDATE)])
def test_a_server_that_is_not_a_dask_scheduler_is_one_error_in_bounded_time(env_dirs, capsys, monkeypatch, reply,
                                                                            command):
    import online.sweep_dask as sd

    monkeypatch.setattr(sd, "DASK_CONNECT_S", 1)
    sock, held = _server(reply)
    try:
        t0 = time.monotonic()
        status = main([*command, "--scheduler", f"tcp://127.0.0.1:{sock.getsockname()[1]}"])
        spent = time.monotonic() - t0
    finally:
        sock.close()
        for c in held:
            c.close()
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Dask scheduler at tcp://127.0.0.1:" in err and "Traceback" not in err and err.count("\n") <= 3
    assert spent < 120                         # a bound, not a timing: the hang was forever

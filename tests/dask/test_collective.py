"""The collective of a distributed run (dask/collective.py), ranks as threads of this
process (NumPy only: no numba kernel runs on two threads at once): sums in rank order,
the same bytes on every rank; broadcast; gather; a silent or closed peer is named."""
import json
import re
import socket
import struct
import threading
import time

import numpy as np
import pytest

from oocboost.dask import collective as coll
from oocboost.dask.collective import Collective, CollectiveError, listen, new_token

TOKEN = new_token()


def _run_ranks(n, body, timeout=5.0, server=None, contexts=(None, None), before=None):
    """Ranks as threads; ``before(port)`` runs once rank 0 listens (an attacker)."""
    if server is None:
        server, port = listen("127.0.0.1")
    else:
        server, port = server
    results, errors = [None] * n, []
    if before is not None:
        before(port)

    def rank_main(rank):
        try:
            c = (Collective.root(server, n, TOKEN, timeout, ssl_context=contexts[0])
                 if rank == 0
                 else Collective.connect(rank, n, "127.0.0.1", port, TOKEN, timeout,
                                         ssl_context=contexts[1]))
            try:
                results[rank] = body(c)
            finally:
                c.close()
        except Exception as exc:   # reported below, with its rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results, errors


@pytest.mark.parametrize("n", [1, 2, 4])
def test_sum_is_added_in_rank_order_and_identical_everywhere(n):
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(3, 5, 7)) * 10.0 ** rng.integers(-8, 8, size=(3, 5, 7))
             for _ in range(n)]
    expected = parts[0].copy()
    for p in parts[1:]:
        expected += p

    def body(c):
        a = parts[c.rank].copy()
        c.sum_(a)
        c.sum_(a)     # a second round on the same connections
        return a, c.bytes_sent, c.n_sums

    results, errors = _run_ranks(n, body)
    assert not errors
    twice = expected.copy()
    for p in [expected] * (n - 1):
        twice += p
    for a, _, n_sums in results:
        assert a.tobytes() == twice.tobytes() and n_sums == 2
    if n > 1:
        assert results[0][1] > 2 * (n - 1) * expected.nbytes   # two sums sent back


def _slot_parts(n, dtype, high, shape=(9, 3, 4, 2)):
    """Each rank's array of ``shape`` (values in [0, high) for integers)."""
    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind == "f":
        return [rng.normal(size=shape) * 10.0 ** rng.integers(-8, 8, size=shape)
                for _ in range(n)]
    return [rng.integers(0, high, size=shape).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("dtype, high, frame_dtype", [
    (np.int32, 200 // 4, np.uint8),          # the sum fits 8 bits too
    (np.int32, 60_000 // 4, np.uint16),
    (np.int32, 2 ** 28, np.int32),           # too wide for 16 bits: sent as it is
    (np.float64, None, np.float64),
])
@pytest.mark.parametrize("slots", [[0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 5, 7, 8], [4], []])
@pytest.mark.parametrize("chunk_bytes", [None, 200])
def test_sum_slots_is_sum_of_the_slots_and_leaves_the_others(n, dtype, high, frame_dtype,
                                                            slots, chunk_bytes,
                                                            monkeypatch):
    """Summed from and into the array itself, run by run (not a copy of the slots), in
    the narrowest unsigned dtype that holds the values, added in rank order: the same
    bytes as sum_ of the slots; the other slots keep each rank's own values. With
    ``chunk_bytes`` 200 what passes through the buffer does so a slot or two at a time
    (runs cut across chunks)."""
    if chunk_bytes is not None:
        monkeypatch.setattr(coll, "CHUNK_BYTES", chunk_bytes)
    parts = _slot_parts(n, dtype, high)
    slots = np.asarray(slots, np.int64)
    expected = parts[0][slots].copy()
    for p in parts[1:]:
        expected += p[slots]

    def body(c):
        a = parts[c.rank].copy()
        original = a.copy()
        c.sum_slots(a, slots)
        others = np.setdiff1d(np.arange(len(a)), slots)
        return a[slots], np.array_equal(a[others], original[others]), c.bytes_sent

    results, errors = _run_ranks(n, body)
    assert not errors, errors
    for summed, others_kept, _ in results:
        assert summed.dtype == np.dtype(dtype) and summed.tobytes() == expected.tobytes()
        assert others_kept
    if n > 1 and len(slots):
        # rank 1 sent one frame, of the narrow dtype
        shape = [len(slots), 3, 4, 2]
        head = json.dumps({"dtype": np.dtype(frame_dtype).str, "shape": shape}).encode()
        assert results[1][2] == (16 + len(head)
                                 + int(np.prod(shape)) * np.dtype(frame_dtype).itemsize)


@pytest.mark.parametrize("n", [2, 3])
def test_sum_slots_to_root_sums_on_rank_0_and_zeroes_the_others(n):
    parts = _slot_parts(n, np.int32, 1000)
    slots = np.array([0, 2, 3, 8])
    expected = sum(p[slots] for p in parts)

    def body(c):
        a = parts[c.rank].copy()
        c.sum_slots(a, slots, to_root=True)
        return a

    results, errors = _run_ranks(n, body)
    assert not errors, errors
    assert np.array_equal(results[0][slots], expected)
    assert all(not r[slots].any() for r in results[1:])
    others = [1, 4, 5, 6, 7]
    assert all(np.array_equal(r[others], p[others]) for r, p in zip(results, parts))


def test_sum_slots_refuses_a_frame_of_another_dtype_or_shape():
    """An integer sum takes the array's dtype or a narrower unsigned one, of the slots'
    shape: a float, a signed narrow or a wrong shape fails every rank cleanly."""
    for head, body in [({"dtype": "<f4", "shape": [2, 3]}, b"x" * 24),
                       ({"dtype": "|i1", "shape": [2, 3]}, b"x" * 6),
                       ({"dtype": "<u2", "shape": [3, 3]}, b"x" * 18)]:
        def rank_body(c):
            if c.rank == 1:
                c._peers.sendall(_frame(head=head, body=body))
                c._peers.recv(1)
                return None
            return c.sum_slots(np.zeros((4, 3), np.int32), np.array([1, 2]))

        _, errors = _run_ranks(2, rank_body, timeout=5.0)
        by_rank = dict(errors)
        assert isinstance(by_rank.get(0), CollectiveError), errors
        assert "was expected" in str(by_rank[0])


def test_allgather_arrays_in_rank_order():
    def arrays_of(rank):
        return {"sums": np.arange(6.0).reshape(3, 2) + rank, "idx": np.array([0, rank]),
                "ok": np.array([True, rank == 1]), "bits": np.zeros((0, 2), np.uint32)}

    def body(c):
        return c.allgather_arrays(arrays_of(c.rank))

    results, errors = _run_ranks(3, body)
    assert not errors, errors
    for every in results:
        assert len(every) == 3
        for rank, got in enumerate(every):
            expected = arrays_of(rank)
            assert list(got) == list(expected)
            for k, v in expected.items():
                assert got[k].dtype == v.dtype and np.array_equal(got[k], v)


@pytest.mark.parametrize("n", [2, 3])
def test_scatter_slots_hands_each_rank_its_slots(n):
    """Rank 0's slots of rank r land in rank r's array (narrowed on the way), are zeroed
    in rank 0's; every other slot keeps its values."""
    parts = _slot_parts(n, np.int32, 5000)
    slots_of_rank = [np.array([0, 1]), np.array([2, 3, 7]), np.array([5])][:n]

    def body(c):
        a = parts[c.rank].copy()
        c.scatter_slots(a, slots_of_rank)
        return a

    results, errors = _run_ranks(n, body)
    assert not errors, errors
    for r in range(1, n):
        mine = slots_of_rank[r]
        assert np.array_equal(results[r][mine], parts[0][mine])
        assert not results[0][mine].any()
        rest = np.setdiff1d(np.arange(9), mine)
        assert np.array_equal(results[r][rest], parts[r][rest])
    assert np.array_equal(results[0][slots_of_rank[0]], parts[0][slots_of_rank[0]])


def test_broadcast_and_gather():
    def body(c):
        got = c.broadcast({"round": 3} if c.rank == 0 else None)
        return got, c.gather(c.rank * 10)

    results, errors = _run_ranks(3, body)
    assert not errors
    assert [r[0] for r in results] == [{"round": 3}] * 3
    assert results[0][1] == [0, 10, 20] and results[1][1] is None


def test_a_rank_that_leaves_is_named():
    def body(c):
        if c.rank == 1:
            return None          # leaves without summing: its socket closes
        c.sum_(np.zeros(4))

    _, errors = _run_ranks(2, body)
    assert len(errors) == 1 and errors[0][0] == 0
    assert isinstance(errors[0][1], CollectiveError)
    assert "rank 1 closed its connection" in str(errors[0][1])


def test_ranks_that_never_connect_are_named():
    server, _ = listen("127.0.0.1")
    with pytest.raises(CollectiveError, match=r"ranks \[1, 2\] did not connect"):
        Collective.root(server, 3, TOKEN, timeout=0.3)
    with pytest.raises(CollectiveError, match="cannot reach rank 0"):
        Collective.connect(1, 2, "127.0.0.1", 1, TOKEN, timeout=0.3)


def test_rank_0_listens_only_on_the_interface_it_is_given():
    server, _ = listen("127.0.0.1")
    try:
        assert server.getsockname()[0] == "127.0.0.1"
    finally:
        server.close()


def _frame(obj=None, head=None, body=b""):
    head = json.dumps({"json": obj} if head is None else head).encode()
    return (struct.pack("!Q", len(head)) + head + struct.pack("!Q", len(body)) + body)


def _connect_first(port, talk, replies):
    """Connect before any rank (first in rank 0's accept queue), then ``talk(sock)`` on
    a thread; its result goes to ``replies``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    threading.Thread(target=lambda: replies.append(talk(sock))).start()


def _reply(replies):
    """The rogue's one reply, once its thread has it."""
    deadline = time.monotonic() + 10
    while not replies and time.monotonic() < deadline:
        time.sleep(0.01)
    return replies


def _rogue(sock, answer):
    """Read the challenge, send ``answer(challenge)``; returns what came back (b'' when
    rank 0 closed the connection)."""
    n = struct.unpack("!Q", sock.recv(8))[0]
    challenge = json.loads(sock.recv(n))["json"]
    sock.recv(8)
    sock.sendall(answer(challenge))
    try:
        return sock.recv(100)
    except OSError:
        return b""
    finally:
        sock.close()


@pytest.mark.parametrize("attack", ["no token", "wrong token", "replayed mac", "garbage",
                                    "rank 0", "silent"])
def test_a_rogue_peer_is_refused_and_the_genuine_rank_admitted(attack, monkeypatch):
    """A rogue client that connected first and claimed rank 1 had its array summed into
    the model, and the genuine rank 1 was refused."""
    monkeypatch.setattr(coll, "HANDSHAKE_SECONDS", 0.5)
    other = new_token()
    answers = {
        "no token": lambda c: _frame({"rank": 1, "mac": ""}),
        "wrong token": lambda c: _frame({"rank": 1,
                                         "mac": coll._mac(other, bytes.fromhex(c), 1)}),
        "replayed mac": lambda c: _frame({"rank": 1, "mac": coll._mac(TOKEN, b"0" * 32, 1)}),
        "garbage": lambda c: b"\xff" * 64,
        "rank 0": lambda c: _frame({"rank": 0, "mac": coll._mac(TOKEN, bytes.fromhex(c), 0)}),
        "silent": lambda c: b"",
    }
    replies = []
    results, errors = _run_ranks(
        2, lambda c: c.sum_(np.full(3, float(c.rank + 1))).tolist(),
        before=lambda port: _connect_first(
            port, lambda sock: _rogue(sock, answers[attack]), replies))
    assert not errors, errors
    assert results == [[3.0, 3.0, 3.0]] * 2     # 1 + 2: nothing of the rogue's
    assert _reply(replies) == [b""]              # closed without a word


@pytest.mark.parametrize("frame, message", [
    (struct.pack("!Q", 2 ** 62), "header claims 4,611,686,018,427,387,904 bytes"),
    (_frame(head={"dtype": "<f8", "shape": [3]})[:-8] + struct.pack("!Q", 2 ** 62),
     "body claims"),
    (_frame(head={"dtype": "|O", "shape": [3]}, body=b"x" * 24), "does not describe"),
    (_frame(head={"dtype": "<f8", "shape": [4]}, body=b"x" * 24), "does not describe"),
    (_frame(head={"dtype": "<f4", "shape": [6]}, body=b"x" * 24), "float32 .* where float64"),
    (_frame({"a": 1}), "JSON frame where an array"),
    (_frame(head={"nested": "[" * 100}), "neither JSON nor an array"),
])
def test_malformed_frames_fail_the_run_cleanly(frame, message):
    """A header claiming 2**62 bytes gave MemoryError; now every frame is bounded and
    checked before anything is allocated, and every rank ends with CollectiveError."""
    def body(c):
        if c.rank == 1:
            c._peers.sendall(frame)       # a peer gone wrong, after a proper handshake
            c._peers.recv(1)              # rank 0 then closes: this rank fails too
            return None
        return c.sum_(np.zeros(3))

    _, errors = _run_ranks(2, body, timeout=5.0)
    by_rank = dict(errors)
    assert isinstance(by_rank.get(0), CollectiveError), errors
    assert re.search(message, str(by_rank[0])), str(by_rank[0])


def test_tls_when_the_cluster_uses_it():
    """With Dask's TLS security the frames are encrypted and certificates checked:
    a plain-text peer is refused, TLS ranks sum as before."""
    from distributed.security import Security

    security = Security.temporary()
    server_ctx = security.get_listen_args("worker")["ssl_context"]
    client_ctx = security.get_connection_args("worker")["ssl_context"]
    replies = []
    results, errors = _run_ranks(
        2, lambda c: c.sum_(np.full(2, float(c.rank + 1))).tolist(),
        contexts=(server_ctx, client_ctx),
        before=lambda port: _connect_first(port, _plain_peer, replies))
    assert not errors, errors
    assert results == [[3.0, 3.0]] * 2
    assert _reply(replies) == [b""]


def _plain_peer(sock):
    try:
        sock.sendall(_frame({"rank": 1, "mac": "00"}))
        return sock.recv(100)
    except OSError:
        return b""
    finally:
        sock.close()

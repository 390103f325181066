"""The collective of a distributed run (dask/collective.py), ranks as threads of this
process (NumPy only: no numba kernel runs on two threads at once): sums in rank order,
the same bytes on every rank; broadcast; gather; a silent or closed peer is named."""
import threading

import numpy as np
import pytest

from oocboost.dask.collective import Collective, CollectiveError, listen


def _run_ranks(n, body, timeout=5.0):
    server, port = listen("127.0.0.1")
    results, errors = [None] * n, []

    def rank_main(rank):
        try:
            c = (Collective.root(server, n, timeout) if rank == 0
                 else Collective.connect(rank, n, "127.0.0.1", port, timeout))
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
        Collective.root(server, 3, timeout=0.3)
    with pytest.raises(CollectiveError, match="cannot reach rank 0"):
        Collective.connect(1, 2, "127.0.0.1", 1, timeout=0.3)

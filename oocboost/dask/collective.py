"""A small collective among the workers of one training run: sum of arrays, broadcast
and gather, over TCP, with rank 0 at the centre (a star).

Why not through Dask's scheduler: a boosting round makes about ``max_depth`` passes, and
each pass's histograms must be summed before its splits are searched; a scheduler round
trip a pass (tens of milliseconds) would cost more than the pass. Here a pass costs one
message each way between rank 0 and each other rank.

Rank 0 adds the arrays in rank order and sends the same bytes back to every rank, so the
sums (and everything decided from them) are identical on all workers. Bytes sent per
sum: ``2 x (n_ranks - 1) x array bytes`` in all, through rank 0's link, which is where a
large cluster would move to a tree or a ring (docs/distributed.md).

Messages are length-prefixed: a numpy array as its dtype and shape (JSON) then its raw
bytes, anything else as JSON. Nothing received is unpickled, so a stray connection to
the port cannot make a rank run code. Every receive has a timeout: a rank that stops
answering (a dead worker) raises :class:`CollectiveError` naming it.
"""
import json
import socket
import struct
import time

import numpy as np

from ..errors import OocboostError

_HEADER = struct.Struct("!Q")
#: Seconds a rank waits for a message before giving up on its peer.
DEFAULT_TIMEOUT = 600.0


class CollectiveError(OocboostError):
    """A peer of the collective closed its connection or did not answer in time."""


def _send(sock, obj):
    if isinstance(obj, np.ndarray):
        data = np.ascontiguousarray(obj)
        head = json.dumps({"dtype": data.dtype.str, "shape": list(data.shape)}).encode()
        body = data.tobytes()
    else:
        head, body = json.dumps({"json": obj}).encode(), b""
    sock.sendall(_HEADER.pack(len(head)) + head + _HEADER.pack(len(body)) + body)
    return 2 * _HEADER.size + len(head) + len(body)


def _recv_exact(sock, n, who):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        try:
            k = sock.recv_into(view[got:], n - got)
        except socket.timeout:
            raise CollectiveError(f"{who} did not answer in time") from None
        except OSError as exc:
            raise CollectiveError(f"{who}: connection failed ({exc})") from None
        if k == 0:
            raise CollectiveError(f"{who} closed its connection (its worker stopped?)")
        got += k
    return buf


def _recv(sock, who):
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, who))
    head = json.loads(_recv_exact(sock, n, who))
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, who))
    body = _recv_exact(sock, n, who)
    if "json" in head:
        return head["json"]
    return np.frombuffer(body, dtype=np.dtype(head["dtype"])).reshape(head["shape"])


def listen(host="0.0.0.0"):
    """A listening socket for rank 0 on a free port; returns ``(socket, port)``."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, 0))
    server.listen()
    return server, server.getsockname()[1]


class Collective:
    """One rank's end of the collective.

    Parameters
    ----------
    rank, n_ranks : int
    peers : dict of int -> socket (rank 0) or socket (other ranks)
        Use :meth:`root` and :meth:`connect` to make one.
    """

    def __init__(self, rank, n_ranks, peers, timeout=DEFAULT_TIMEOUT):
        self.rank = rank
        self.n_ranks = n_ranks
        self._peers = peers
        self.timeout = timeout
        self.bytes_sent = 0
        self.seconds = 0.0
        self.n_sums = 0

    @classmethod
    def root(cls, server, n_ranks, timeout=DEFAULT_TIMEOUT):
        """Rank 0: accept the other ``n_ranks - 1`` ranks on ``server``."""
        server.settimeout(timeout)
        peers = {}
        try:
            while len(peers) < n_ranks - 1:
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    missing = sorted(set(range(1, n_ranks)) - set(peers))
                    raise CollectiveError(f"ranks {missing} did not connect within "
                                          f"{timeout:.0f} s") from None
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(timeout)
                peers[int(_recv(conn, "a connecting rank"))] = conn
        finally:
            server.close()
        return cls(0, n_ranks, peers, timeout)

    @classmethod
    def connect(cls, rank, n_ranks, host, port, timeout=DEFAULT_TIMEOUT):
        """Rank ``rank`` > 0: connect to rank 0 at ``host:port``."""
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise CollectiveError(f"rank {rank} cannot reach rank 0 at {host}:{port} "
                                  f"({exc})") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _send(sock, rank)
        return cls(rank, n_ranks, sock, timeout)

    def sum_(self, array):
        """Replace ``array`` (a numpy array, same shape on every rank) by its sum over
        the ranks, added in rank order by rank 0."""
        t0 = time.perf_counter()
        if self.rank == 0:
            for r in range(1, self.n_ranks):
                array += _recv(self._peers[r], f"rank {r}")
            for r in range(1, self.n_ranks):
                self.bytes_sent += _send(self._peers[r], array)
        else:
            self.bytes_sent += _send(self._peers, np.ascontiguousarray(array))
            array[...] = _recv(self._peers, "rank 0")
        self.seconds += time.perf_counter() - t0
        self.n_sums += 1
        return array

    def broadcast(self, obj=None):
        """Rank 0's ``obj`` on every rank."""
        if self.rank == 0:
            for r in range(1, self.n_ranks):
                self.bytes_sent += _send(self._peers[r], obj)
            return obj
        return _recv(self._peers, "rank 0")

    def gather(self, obj):
        """Rank 0: the list of every rank's ``obj`` in rank order; other ranks: None."""
        if self.rank == 0:
            return [obj] + [_recv(self._peers[r], f"rank {r}")
                            for r in range(1, self.n_ranks)]
        self.bytes_sent += _send(self._peers, obj)
        return None

    def close(self):
        peers = self._peers.values() if isinstance(self._peers, dict) else [self._peers]
        for sock in peers:
            try:
                sock.close()
            except OSError:
                pass

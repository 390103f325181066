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

Histograms go through :meth:`Collective.sum_slots`: the slots a pass built are sent from
and received into the histogram pool itself (runs of consecutive slots; what must pass
through a buffer does so :data:`CHUNK_BYTES` at a time), and integer histograms travel
in the narrowest unsigned dtype that holds every value of the frame. With ``to_root``
only rank 0 gets the sums, and :meth:`Collective.scatter_slots` hands each rank the sums
of the nodes it searches (a forest's sampled-feature histograms, read by the split
search alone); :meth:`Collective.allgather_arrays` then gives every rank every rank's
splits.

Messages are length-prefixed: a numpy array as its dtype and shape (JSON) then its raw
bytes, anything else as JSON. Nothing received is unpickled, so a stray connection to
the port cannot make a rank run code. Every receive has a timeout: a rank that stops
answering (a dead worker) raises :class:`CollectiveError` naming it.

Who may join: rank 0 listens only on its worker's own interface (the host of the address
Dask gives the worker), and admits a connection only after it proved it holds the run's
token, a random secret that ``run_ranks`` hands to every rank through the Dask scheduler:
rank 0 sends a fresh random challenge, the rank answers with its rank number and
``HMAC-SHA256(token, challenge || rank)``. A connection that answers wrong, claims a
rank already taken or says nothing within :data:`HANDSHAKE_SECONDS` is closed and rank 0
goes on waiting for the genuine ranks. When the cluster runs on TLS (``tls://``
addresses), the sockets are wrapped with the worker's Dask ``Security`` contexts, so the
frames are encrypted and the peers' certificates checked as Dask's own connections are.

Every frame is bounded before anything is allocated: a header of at most
:data:`MAX_HEAD_BYTES`, a body of at most :data:`MAX_BODY_BYTES` (and, for a sum, exactly
the local array's bytes), an array of a numeric dtype whose shape matches its bytes. A
frame outside these bounds fails the run with :class:`CollectiveError` on every rank (the
others then lose their connection to the rank that stopped).
"""
import hashlib
import hmac
import json
import logging
import secrets
import socket
import struct
import time

import numpy as np

from ..errors import OocboostError

log = logging.getLogger(__name__)
_HEADER = struct.Struct("!Q")
#: Seconds a rank waits for a message before giving up on its peer.
DEFAULT_TIMEOUT = 600.0
#: Seconds a connecting peer has to answer rank 0's challenge.
HANDSHAKE_SECONDS = 10.0
#: Largest frame header (JSON: a dtype and a shape, or a small object).
MAX_HEAD_BYTES = 1 << 16
#: Largest frame body: histograms of a pass, a broadcast split list, a gathered model.
MAX_BODY_BYTES = 1 << 34
_ARRAY_KINDS = "biuf"
#: Narrower dtypes an integer sum's frames may travel in (:meth:`Collective.sum_slots`).
NARROW_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16))
#: Bytes of slots packed or received at a time through a rank's buffer: the most the
#: slot sums hold beside the histograms themselves (within the plan's safety margin).
CHUNK_BYTES = 8 << 20


class CollectiveError(OocboostError):
    """A peer of the collective closed its connection, did not answer in time, or sent
    what the protocol does not carry."""


def new_token():
    """A run's secret (hex): every rank gets it from the client through the scheduler."""
    return secrets.token_hex(32)


def _mac(token, challenge, rank):
    return hmac.new(bytes.fromhex(token), challenge + str(rank).encode(),
                    hashlib.sha256).hexdigest()


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
    """The next ``n`` bytes from ``sock`` (a bytearray)."""
    buf = bytearray(n)
    _recv_into(sock, memoryview(buf), who)
    return buf


def _length(sock, who, bound, what):
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, who))
    if n > bound:
        raise CollectiveError(f"{who} sent a frame whose {what} claims {n:,} bytes, more "
                              f"than the {bound:,} the protocol carries")
    return n


def _array_of(head, body, who, expect):
    dtype, shape = head.get("dtype"), head.get("shape")
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in _ARRAY_KINDS or not isinstance(shape, list) \
            or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d
                       for d in shape) \
            or int(np.prod(shape, dtype=object)) * dtype.itemsize != len(body):
        raise CollectiveError(f"{who} sent an array frame that does not describe its "
                              f"{len(body):,} bytes (dtype {head.get('dtype')!r}, shape "
                              f"{head.get('shape')!r})")
    array = np.frombuffer(body, dtype=dtype).reshape(shape)
    if expect is not None and (array.dtype != expect.dtype or array.shape != expect.shape):
        raise CollectiveError(f"{who} sent a {array.dtype} {array.shape} array where "
                              f"{expect.dtype} {expect.shape} was expected")
    return array


def _recv(sock, who, expect=None):
    """One frame from ``who``; with ``expect`` (an array), an array of its dtype and shape."""
    from ..utils.jsonio import parse

    n = _length(sock, who, MAX_HEAD_BYTES, "header")
    head = parse(bytes(_recv_exact(sock, n, who)), error=CollectiveError,
                 where=f"a frame header from {who}")
    bound = MAX_BODY_BYTES if expect is None else expect.nbytes
    body = _recv_exact(sock, _length(sock, who, bound, "body"), who)
    if not isinstance(head, dict) or ("json" in head) == ("dtype" in head):
        raise CollectiveError(f"{who} sent a frame header that is neither JSON nor an array")
    if "json" in head:
        if expect is not None or body:
            raise CollectiveError(f"{who} sent a JSON frame where an array was expected")
        return head["json"]
    return _array_of(head, body, who, expect)


def _runs(slots):
    """``(first, stop, start, end)`` of each run of consecutive ``slots`` (sorted,
    unique): ``array[first:stop]`` is ``packed[start:end]`` of the slots packed in order."""
    slots = np.asarray(slots, np.int64)
    breaks = np.flatnonzero(np.diff(slots) != 1) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [len(slots)])).tolist()
    return [(int(slots[s]), int(slots[e - 1]) + 1, s, e) for s, e in zip(starts, ends)
            if e > s]


def _narrowest(parts, dtype):
    """The dtype ``parts`` (arrays of ``dtype``) travel in: for integers, the narrowest
    of :data:`NARROW_DTYPES` that holds every value (counts of a deep node's rows fit
    in 16 bits), else ``dtype``."""
    sized = [p for p in parts if p.size]
    if dtype.kind not in "iu" or not sized:
        return dtype
    lo, hi = min(int(p.min()) for p in sized), max(int(p.max()) for p in sized)
    for narrow in NARROW_DTYPES:
        if narrow.itemsize < dtype.itemsize and lo >= 0 and hi <= np.iinfo(narrow).max:
            return narrow
    return dtype


def _chunks(slots, slot_bytes):
    """``slots`` cut into consecutive pieces of at most :data:`CHUNK_BYTES` of slots of
    ``slot_bytes`` each (one slot at least)."""
    k = max(1, CHUNK_BYTES // max(int(slot_bytes), 1))
    return [slots[i:i + k] for i in range(0, len(slots), k)]


def _scratch_array(scratch, n_slots, slot_shape, dtype):
    """An array of ``n_slots`` slots of ``slot_shape`` and ``dtype`` over the start of
    ``scratch`` (a bytearray at least that long): a buffer reused chunk after chunk and
    pass after pass, whose pages are not faulted in again each time."""
    n = n_slots * int(np.prod(slot_shape, dtype=np.int64))
    return np.frombuffer(scratch, dtype, n).reshape((n_slots,) + tuple(slot_shape))


def _send_slots(sock, array, slots, scratch):
    """``array[slots]`` as one array frame: integers in the narrowest dtype that holds
    every value (packed chunk by chunk in ``scratch``), anything else straight from the
    array's memory, a run of consecutive slots at a time; the bytes sent."""
    shape = (len(slots),) + array.shape[1:]
    dtype = _narrowest([array[a:b] for a, b, _, _ in _runs(slots)], array.dtype)
    head = json.dumps({"dtype": dtype.str, "shape": list(shape)}).encode()
    n_body = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    sock.sendall(_HEADER.pack(len(head)) + head + _HEADER.pack(n_body))
    if dtype == array.dtype:
        for a, b, _, _ in _runs(slots):
            sock.sendall(memoryview(array[a:b]).cast("B"))
    else:
        for chunk in _chunks(slots, array[0].nbytes):
            packed = _scratch_array(scratch, len(chunk), array.shape[1:], dtype)
            for a, b, i, j in _runs(chunk):
                packed[i:j] = array[a:b]
            sock.sendall(memoryview(packed).cast("B"))
    return 2 * _HEADER.size + len(head) + n_body


def _recv_slots_head(sock, who, array, shape):
    """The dtype of an array frame of ``shape`` from ``who``, its header and length read:
    ``array``'s dtype or, for an integer array, a narrower unsigned one."""
    from ..utils.jsonio import parse

    n = _length(sock, who, MAX_HEAD_BYTES, "header")
    head = parse(bytes(_recv_exact(sock, n, who)), error=CollectiveError,
                 where=f"a frame header from {who}")
    allowed = [array.dtype] + (list(NARROW_DTYPES) if array.dtype.kind in "iu" else [])
    dtype = None
    if isinstance(head, dict) and "dtype" in head and "json" not in head:
        try:
            dtype = np.dtype(head["dtype"])
        except (TypeError, ValueError):
            dtype = None
    if dtype not in allowed or head.get("shape") != list(shape):
        raise CollectiveError(f"{who} sent {head.get('dtype')!r} {head.get('shape')!r} "
                              f"where {array.dtype} {list(shape)} (or a narrower unsigned "
                              f"integer dtype) was expected" if isinstance(head, dict)
                              else f"{who} sent a frame header that is not an array's")
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    n_body = _length(sock, who, expected, "body")
    if n_body != expected:
        raise CollectiveError(f"{who} sent {n_body:,} bytes for a {dtype} {list(shape)} "
                              f"array of {expected:,}")
    return dtype


def _recv_slots(sock, who, array, slots, scratch, add):
    """An array frame of ``array[slots]``'s shape from ``who``, added into (``add``) or
    written over ``array``'s slots: straight into them when it has the array's dtype
    and is not added, else chunk by chunk through ``scratch``."""
    dtype = _recv_slots_head(sock, who, array, (len(slots),) + array.shape[1:])
    if dtype == array.dtype and not add:
        for a, b, _, _ in _runs(slots):
            _recv_into(sock, memoryview(array[a:b]).cast("B"), who)
        return
    for chunk in _chunks(slots, array[0].nbytes):
        got = _scratch_array(scratch, len(chunk), array.shape[1:], dtype)
        _recv_into(sock, memoryview(got).cast("B"), who)
        for a, b, i, j in _runs(chunk):
            if add:
                array[a:b] += got[i:j]
            else:
                array[a:b] = got[i:j]


def _recv_into(sock, view, who):
    """Fill ``view`` (a writable byte memoryview) from ``sock``."""
    got, n = 0, len(view)
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


def listen(host):
    """A listening socket for rank 0 on a free port of ``host`` (its worker's interface,
    never every interface); returns ``(socket, port)``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, 0))
    server.listen()
    return server, server.getsockname()[1]


def _admit(conn, address, n_ranks, token, peers, ssl_context):
    """``(rank, socket)`` of a connection that answered the challenge for a rank not yet
    taken; None (connection closed, a warning logged) for anything else."""
    who = f"a connection from {address[0]}:{address[1]}"
    try:
        conn.settimeout(HANDSHAKE_SECONDS)
        if ssl_context is not None:
            conn = ssl_context.wrap_socket(conn, server_side=True)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        challenge = secrets.token_bytes(32)
        _send(conn, challenge.hex())
        answer = _recv(conn, who)
        rank = answer.get("rank") if isinstance(answer, dict) else None
        mac = answer.get("mac") if isinstance(answer, dict) else None
        if not isinstance(rank, int) or isinstance(rank, bool) or not isinstance(mac, str) \
                or not mac.isascii():
            raise CollectiveError(f"{who} did not answer the challenge")
        if not hmac.compare_digest(mac, _mac(token, challenge, rank)):
            raise CollectiveError(f"{who} claimed rank {rank} without the run's token")
        if not 1 <= rank < n_ranks or rank in peers:
            raise CollectiveError(f"{who} claimed rank {rank}, which is "
                                  f"{'taken' if rank in peers else 'not of this run'}")
        _send(conn, "admitted")
        return rank, conn
    except (CollectiveError, OSError) as exc:
        log.warning("collective: refused %s", exc)
        try:
            conn.close()
        except OSError:
            pass
        return None


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
        # slot frames pass through it a chunk at a time (at most CHUNK_BYTES, or a slot)
        self._scratch = bytearray()

    @classmethod
    def root(cls, server, n_ranks, token, timeout=DEFAULT_TIMEOUT, ssl_context=None):
        """Rank 0: admit the other ``n_ranks - 1`` ranks on ``server`` (module
        docstring: each proves it holds ``token``; others are closed and ignored)."""
        deadline = time.monotonic() + timeout
        peers = {}
        try:
            while len(peers) < n_ranks - 1:
                left = deadline - time.monotonic()
                server.settimeout(max(left, 0.001))
                try:
                    conn, address = server.accept()
                except socket.timeout:
                    missing = sorted(set(range(1, n_ranks)) - set(peers))
                    raise CollectiveError(f"ranks {missing} did not connect within "
                                          f"{timeout:.0f} s") from None
                admitted = _admit(conn, address, n_ranks, token, peers, ssl_context)
                if admitted is not None:
                    rank, sock = admitted
                    sock.settimeout(timeout)
                    peers[rank] = sock
        finally:
            server.close()
        return cls(0, n_ranks, peers, timeout)

    @classmethod
    def connect(cls, rank, n_ranks, host, port, token, timeout=DEFAULT_TIMEOUT,
                ssl_context=None):
        """Rank ``rank`` > 0: connect to rank 0 at ``host:port`` and prove it holds
        ``token``."""
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
            if ssl_context is not None:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
        except OSError as exc:
            raise CollectiveError(f"rank {rank} cannot reach rank 0 at {host}:{port} "
                                  f"({exc})") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        challenge = _recv(sock, "rank 0")
        if not isinstance(challenge, str) or len(challenge) != 64:
            raise CollectiveError("rank 0 sent no challenge: not an oocboost run's rank 0")
        _send(sock, {"rank": rank, "mac": _mac(token, bytes.fromhex(challenge), rank)})
        if _recv(sock, "rank 0") != "admitted":
            raise CollectiveError(f"rank 0 did not admit rank {rank}")
        return cls(rank, n_ranks, sock, timeout)

    def sum_(self, array):
        """Replace ``array`` (a numpy array, same shape on every rank) by its sum over
        the ranks, added in rank order by rank 0."""
        t0 = time.perf_counter()
        if self.rank == 0:
            for r in range(1, self.n_ranks):
                array += _recv(self._peers[r], f"rank {r}", expect=array)
            for r in range(1, self.n_ranks):
                self.bytes_sent += _send(self._peers[r], array)
        else:
            self.bytes_sent += _send(self._peers, np.ascontiguousarray(array))
            array[...] = _recv(self._peers, "rank 0", expect=array)
        self.seconds += time.perf_counter() - t0
        self.n_sums += 1
        return array

    def sum_slots(self, array, slots, to_root=False):
        """Replace ``array[slots]`` (``slots`` sorted and unique, along the first axis of
        a C-contiguous ``array``) by its sum over the ranks, added in rank order by rank
        0, as :meth:`sum_` of ``array[slots]`` would, without copying the slots out:
        runs of consecutive slots are sent from and received into ``array`` itself, and
        what passes through a buffer does so :data:`CHUNK_BYTES` at a time. Integer
        arrays travel in the narrowest unsigned dtype that holds their values (each
        sender and rank 0's sum chooses its own; the frame says which).

        ``to_root``: only rank 0 gets the sum; the other ranks send their slots and
        zero them (half the traffic, for sums only rank 0 reads)."""
        t0 = time.perf_counter()
        slots = self._checked_slots(array, slots)
        if len(slots) and array[0].size:   # the same on every rank: same slots
            if self.rank == 0:
                for r in range(1, self.n_ranks):
                    _recv_slots(self._peers[r], f"rank {r}", array, slots, self._scratch,
                                add=True)
                if not to_root:
                    for r in range(1, self.n_ranks):
                        self.bytes_sent += _send_slots(self._peers[r], array, slots,
                                                       self._scratch)
            else:
                self.bytes_sent += _send_slots(self._peers, array, slots, self._scratch)
                if to_root:
                    for a, b, _, _ in _runs(slots):
                        array[a:b] = 0
                else:
                    _recv_slots(self._peers, "rank 0", array, slots, self._scratch,
                                add=False)
        self.seconds += time.perf_counter() - t0
        self.n_sums += 1
        return array

    def scatter_slots(self, array, slots_of_rank):
        """Rank 0 sends each rank ``r`` its ``array[slots_of_rank[r]]`` (sorted, unique
        slots; the same list on every rank), which lands in that rank's ``array`` at the
        same slots, and zeroes them in its own."""
        t0 = time.perf_counter()
        if self.rank == 0:
            for r in range(1, self.n_ranks):
                slots = self._checked_slots(array, slots_of_rank[r])
                if len(slots) and array[0].size:
                    self.bytes_sent += _send_slots(self._peers[r], array, slots,
                                                   self._scratch)
                    for a, b, _, _ in _runs(slots):
                        array[a:b] = 0
        else:
            slots = self._checked_slots(array, slots_of_rank[self.rank])
            if len(slots) and array[0].size:
                _recv_slots(self._peers, "rank 0", array, slots, self._scratch, add=False)
        self.seconds += time.perf_counter() - t0
        return array

    def _checked_slots(self, array, slots):
        """``slots`` as int64, the array checked for the slot frames; the scratch grown
        to one chunk of its slots before any view of it exists (it cannot grow then)."""
        if not array.flags.c_contiguous:
            raise ValueError("slot sums need a C-contiguous array")
        slots = np.asarray(slots, np.int64)
        if len(array):
            needed = max(CHUNK_BYTES, array[0].nbytes)
            if len(self._scratch) < needed:
                self._scratch.extend(bytes(needed - len(self._scratch)))
        return slots

    def broadcast(self, obj=None):
        """Rank 0's ``obj`` on every rank."""
        if self.rank == 0:
            for r in range(1, self.n_ranks):
                self.bytes_sent += _send(self._peers[r], obj)
            return obj
        return _recv(self._peers, "rank 0")

    def _send_arrays(self, sock, arrays):
        names = list(arrays)
        self.bytes_sent += _send(sock, names)
        for name in names:
            self.bytes_sent += _send(sock, np.asarray(arrays[name]))

    @staticmethod
    def _recv_arrays(sock, who):
        names = _recv(sock, who)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise CollectiveError(f"{who} sent no list of array names")
        out = {}
        for name in names:
            got = _recv(sock, who)
            if not isinstance(got, np.ndarray):
                raise CollectiveError(f"{who} sent no array for {name!r}")
            out[name] = got
        return out

    def allgather_arrays(self, arrays):
        """Every rank's ``arrays`` (a dict of str -> numpy array), in rank order, on
        every rank."""
        if self.rank == 0:
            every = [arrays] + [self._recv_arrays(self._peers[r], f"rank {r}")
                                for r in range(1, self.n_ranks)]
            for r in range(1, self.n_ranks):
                self.bytes_sent += _send(self._peers[r], len(every))
                for part in every:
                    self._send_arrays(self._peers[r], part)
            return every
        self._send_arrays(self._peers, arrays)
        n = _recv(self._peers, "rank 0")
        if n != self.n_ranks:
            raise CollectiveError(f"rank 0 sent {n!r} parts for {self.n_ranks} ranks")
        return [self._recv_arrays(self._peers, "rank 0") for _ in range(n)]

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

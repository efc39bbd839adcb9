"""Helpers shared by the benchmarks: the corpora, process CPU accounting, logging.

The corpus is kept as arrays of word ids, not text: documents are rendered to text only
when a benchmark sends them, and exact word-3-shingle Jaccard is computed from the ids.
Every vocabulary word is a distinct run of lowercase ASCII letters, so the service's
tokenizer (case-fold, runs of alphanumeric code points) reads back exactly the word
sequence the ids describe; `check_against_oracle` confirms that with tests/support/oracle.py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
# The shared articles, kept in the repository (tests/data/README.md says where they come from).
ARTICLES = ROOT / "tests" / "data" / "articles_1000.train"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Word edit rates of the planted near-duplicates; "scatter" edits single words anywhere,
# "block" replaces, deletes or inserts one to three contiguous spans (a changed header,
# footer or paragraph), so the same rate leaves a higher Jaccard.
EDIT_RATES = (0.01, 0.05, 0.10, 0.15, 0.20, 0.30, 0.40)
EDIT_MODES = ("scatter", "block")
VOCAB_SIZE = 50_000
ZIPF_S = 1.0
_BITS = 17  # word ids < 2**17, so a 3-shingle packs into one int64
assert VOCAB_SIZE < 2**_BITS


def log(msg: str) -> None:
    """Progress on stderr, so stdout holds only the figures."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- corpus ---------------------------------------------------------------------------------


def pan_table(kinds: Iterable[str], columns: dict[str, Any], width: int) -> list[str]:
    """Lines of PAN's measures (plagdet, precision, recall, granularity) by kind, a column
    per build: columns maps its heading to its scores by kind (tests/support/pan.Score)."""
    lines = [f"{'kind':>{width}} " + " ".join(f"{name:>26}" for name in columns)]
    for kind in kinds:
        cells = [
            f"{s.plagdet:.3f} {s.precision:.3f} {s.recall:.3f} {s.granularity:.2f}".rjust(26)
            for s in (scores[kind] for scores in columns.values())
        ]
        lines.append(f"{kind:>{width}} " + " ".join(cells))
    return lines


def read_articles() -> list[str]:
    """Texts of the shared articles, one a line after its id ([] without the file)."""
    if not ARTICLES.exists():
        return []
    with ARTICLES.open(encoding="utf-8") as fh:
        return [line.rstrip("\n").partition(" ")[2] for line in fh]


class Words:
    """A Zipf-distributed vocabulary of distinct lowercase words and a renderer to text."""

    def __init__(self, seed: int, size: int = VOCAB_SIZE, s: float = ZIPF_S) -> None:
        self.rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        seen: set[str] = set()
        words: list[str] = []
        while len(words) < size:
            # frequent words are short, as in natural language
            rank = len(words)
            top = 3 + min(9, int(np.log2(rank + 2)))
            w = "".join(self.rng.choice(letters, size=int(self.rng.integers(2, top + 1))))
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.low = np.array(words, dtype=object)
        self.cap = np.array([w.capitalize() for w in words], dtype=object)
        weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** s
        self.cdf = np.cumsum(weights / weights.sum())
        # sentence ends: one every 6-20 words; a document uses a window of this pattern
        ends = np.zeros(1 << 16, dtype=bool)
        pos = 0
        while pos < len(ends):
            pos += int(self.rng.integers(6, 21))
            if pos < len(ends):
                ends[pos] = True
        self.ends = ends

    def sample(self, n: int) -> np.ndarray:
        """n word ids drawn from the Zipf distribution."""
        ids = np.searchsorted(self.cdf, self.rng.random(n), side="right")
        return np.minimum(ids, len(self.cdf) - 1).astype(np.int32)

    def render(self, ids: np.ndarray) -> str:
        """Text of the words: sentences with a capital first word and a full stop."""
        n = len(ids)
        off = (int(ids[0]) * 7919 + n) % (len(self.ends) - n - 1)
        ends = self.ends[off : off + n].copy()
        ends[-1] = True
        starts = np.zeros(n, dtype=bool)
        starts[0] = True
        starts[1:] = ends[:-1]
        words = self.low[ids]
        words[starts] = self.cap[ids[starts]]
        words[ends] = words[ends] + "."
        return " ".join(words.tolist())

    def edit(self, ids: np.ndarray, rate: float, mode: str) -> np.ndarray:
        """A copy of a document with about rate x len(ids) words edited."""
        n = len(ids)
        if mode == "scatter":
            r = self.rng.random(n)
            sub = r < rate * 0.5
            dele = (r >= rate * 0.5) & (r < rate * 0.75)
            ins = (r >= rate * 0.75) & (r < rate)
            out = ids.copy()
            out[sub] = self.sample(int(sub.sum()))
            at = np.flatnonzero(ins) + 1
            out = np.insert(out, at, self.sample(len(at)))
            keep = np.insert(~dele, at, True)
            return out[keep]
        total = max(1, round(rate * n))
        spans = int(self.rng.integers(1, 4))
        cuts = np.sort(self.rng.integers(0, total + 1, size=spans - 1))
        out = ids.copy()
        for length in np.diff(np.concatenate(([0], cuts, [total]))).tolist():
            if length == 0 or len(out) <= length + 3:
                continue
            start = int(self.rng.integers(0, len(out) - length))
            kind = int(self.rng.integers(0, 4))
            new = self.sample(length) if kind != 2 else self.sample(0)
            if kind == 3:  # insertion: keep the span and add new words before it
                out = np.concatenate((out[:start], self.sample(length), out[start:]))
            else:  # 0, 1: replacement; 2: deletion
                out = np.concatenate((out[:start], new, out[start + length :]))
        return out


def shingle_keys(ids: np.ndarray) -> set[int]:
    """The distinct word 3-shingles of a document, each packed into one int."""
    a = ids.astype(np.int64)
    if len(a) < 3:  # the contract: fewer than K words is one shingle of all of them
        return {int(np.sum(a << (_BITS * np.arange(len(a))))) | (len(a) << 60)}
    return set(((a[:-2] << (2 * _BITS)) | (a[1:-1] << _BITS) | a[2:]).tolist())


def jaccard(a: set[int], b: set[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass
class Pair:
    """A planted near-duplicate: b is a where a fraction `rate` of words were edited."""

    a: int
    b: int
    rate: float
    mode: str
    jaccard: float = 0.0


@dataclass
class Corpus:
    words: Words
    docs: list[np.ndarray]
    pairs: list[Pair]
    ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.ids:
            self.ids = [f"d{i:07d}" for i in range(len(self.docs))]

    def text(self, i: int) -> str:
        return self.words.render(self.docs[i])

    def exact(self, i: int, j: int) -> float:
        return jaccard(shingle_keys(self.docs[i]), shingle_keys(self.docs[j]))


def make_corpus(
    n_docs: int,
    seed: int = 5,
    dup_fraction: float = 0.2,
    words_per_doc: tuple[int, int] = (200, 400),
    chunk: int = 10_000,
) -> Corpus:
    """n_docs documents, dup_fraction of them planted near-duplicates of another.

    Built in chunks of `chunk` documents, each holding its originals and their copies in a
    shuffled order, so every prefix of whole chunks holds complete pairs.
    """
    words = Words(seed)
    docs: list[np.ndarray] = []
    pairs: list[Pair] = []
    grades = [(r, m) for m in EDIT_MODES for r in EDIT_RATES]
    for base in range(0, n_docs, chunk):
        size = min(chunk, n_docs - base)
        n_dup = round(size * dup_fraction)
        n_orig = size - n_dup
        lengths = words.rng.integers(words_per_doc[0], words_per_doc[1] + 1, size=n_orig)
        local = [words.sample(int(n)) for n in lengths]
        sources = words.rng.integers(0, n_orig, size=n_dup)
        local_pairs = []
        for j, src in enumerate(sources.tolist()):
            rate, mode = grades[j % len(grades)]
            local.append(words.edit(local[src], rate, mode))
            local_pairs.append((src, n_orig + j, rate, mode))
        order = words.rng.permutation(size)
        position = np.empty(size, dtype=np.int64)
        position[order] = np.arange(size)
        docs.extend(local[k] for k in order.tolist())
        pairs.extend(
            Pair(base + int(position[a]), base + int(position[b]), rate, mode)
            for a, b, rate, mode in local_pairs
        )
    corpus = Corpus(words, docs, pairs)
    for p in pairs:
        p.jaccard = corpus.exact(p.a, p.b)
    return corpus


def make_hot_corpus(
    n_docs: int = 10_000, boilerplate: int = 200, unique: int = 30, seed: int = 11
) -> Corpus:
    """n_docs documents of one shared boilerplate followed by `unique` words of their own."""
    words = Words(seed)
    common = words.sample(boilerplate)
    docs = [np.concatenate((common, words.sample(unique))) for _ in range(n_docs)]
    return Corpus(words, docs, [], [f"hot{i:05d}" for i in range(n_docs)])


def oracle() -> ModuleType:
    """tests/support/oracle.py, the plain-Python shingling and exact Jaccard the tests trust."""
    return support("oracle")


def support(name: str) -> ModuleType:
    """A module of tests/support (the tests' helpers), loaded from its file."""
    path = ROOT / "tests" / "support" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"neardup_bench_{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path} is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_against_oracle(corpus: Corpus, samples: int = 20) -> bool | None:
    """Exact Jaccard from word ids equals the oracle's on rendered text (None: no pairs)."""
    if not corpus.pairs:
        return None
    reference = oracle()
    for p in corpus.pairs[:samples]:
        a, b = reference.shingles(corpus.text(p.a)), reference.shingles(corpus.text(p.b))
        if abs(reference.exact_jaccard(a, b) - p.jaccard) > 1e-12:
            return False
    return True


# --- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            raw = fh.read()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def tree_pids(root: int) -> list[int]:
    """root and all its descendants."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                children.setdefault(int(st[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds used so far by these processes (vanished ones count 0)."""
    total = 0
    for pid in pids:
        st = _stat(pid)
        if st is not None:
            total += int(st[11]) + int(st[12])
    return total / CLK_TCK


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine have used (busy time, all CPUs)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


def stop_process(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM a process we started (and its session), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


_BURN = (
    "import time\nt = time.perf_counter()\nx = 0\n"
    "for i in range(6_000_000): x += i\nprint(time.perf_counter() - t)"
)


def cpu_parallelism(python: str, procs: int = 2) -> dict[str, float]:
    """How much faster `procs` CPU-bound processes finish together than one after another.

    A VM's vCPUs may be hyperthreads or shared with neighbours; this says what "2 CPUs"
    buys here (2.0 is two full cores).
    """

    def run(n: int) -> list[float]:
        ps = [
            subprocess.Popen([python, "-c", _BURN], stdout=subprocess.PIPE, text=True)
            for _ in range(n)
        ]
        return [float(p.communicate()[0]) for p in ps]

    one = min(run(1)[0] for _ in range(2))
    many = max(run(procs))
    return {"single_s": one, "parallel_s": many, "speedup": procs * one / many}


def chunks(seq: list, size: int) -> Iterator[list]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]

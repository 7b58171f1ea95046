#!/usr/bin/env python3
"""A CPU stand-in for Megatron-LM's ``pretrain_gpt.py``: a small real data- and tensor-parallel
training, with no GPU and no PyTorch, that logs the way Megatron-LM logs.

Every rank (started by ``torchrun``, which gives ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT``) meets the others at the master address (rank 0 keeps the table of addresses, as
torch's TCP store does), then connects to its ring neighbours over TCP. Ranks are laid out as
Megatron lays them out: consecutive ranks form a tensor-parallel group, ranks with the same
position in their tensor group form a data-parallel group.

The model is the catalog's shape scaled down to what a CPU core trains in milliseconds: a token
embedding, one feed-forward block (its first matrix split by columns and its second by rows over
the tensor-parallel group, whose partial outputs are summed over TCP) with a residual, and an
output layer; next-token cross-entropy on mock data that has a learnable structure (each token
mostly follows from the one before it). Each step every data-parallel rank takes its own
micro-batches, the gradients are summed over the data-parallel group over TCP, clipped by their
global norm and applied with Adam under Megatron's warm-up and cosine schedule.

The last rank prints Megatron's iteration line every ``--log-interval`` steps: the wall time per
iteration it measured, the throughput per rank computed from the floating-point operations it
did, the learning rate, the loss averaged over the data-parallel group, the gradient norm.
Rank 0 prints Megatron's ``using world size: ...`` line at start. Megatron options the catalog
renders are accepted; those that change nothing here (kernels, precision, overlap, logging
extras) are accepted and ignored, checkpointing and pipeline parallelism are refused with
exit 2, as is any unknown option.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

import numpy as np

#: how much smaller than the rendered shape the trained model is (hidden and FFN sizes)
SHAPE_DIVISOR = 128
MAX_VOCAB = 256
MAX_SEQ = 64
#: the share of mock-data tokens that do not follow the learnable rule
NOISE = 0.1
FLAGS = (
    "use-mcore-models", "group-query-attention", "squared-relu", "untie-embeddings-and-output-weights",
    "disable-bias-linear", "sequence-parallel", "bf16", "fp16", "use-distributed-optimizer", "overlap-grad-reduce",
    "overlap-param-gather", "manual-gc", "mock-data", "no-mmap-bin-files", "no-create-attention-mask-in-dataloader",
    "log-progress", "log-throughput", "log-params-norm", "log-num-zeros-in-grad", "log-straggler",
    "disable-straggler-on-startup", "use-flash-attn", "swiglu",
)  # fmt: skip
IGNORED_VALUES = (
    "attention-backend", "num-attention-heads", "num-query-groups", "kv-channels", "max-position-embeddings",
    "position-embedding-type", "rotary-base", "rotary-percent", "normalization", "attention-dropout", "hidden-dropout",
    "tokenizer-type", "num-workers", "timing-log-option", "straggler-minmax-count",
    "check-weight-hash-across-dp-replicas-interval", "tensorboard-dir", "eval-interval",
    "recompute-granularity", "recompute-method", "recompute-num-layers",
)  # fmt: skip
REFUSED = ("save", "load", "save-interval", "save-retain-interval", "data-cache-path", "ckpt-format", "async-save")


class StandInError(Exception):
    """A configuration the stand-in cannot train."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pretrain_gpt.py (CPU stand-in)", allow_abbrev=False)
    for name in FLAGS:
        p.add_argument(f"--{name}", action="store_true")
    for name in IGNORED_VALUES:
        p.add_argument(f"--{name}")
    for name in REFUSED:
        p.add_argument(f"--{name}", nargs="?", const="")
    ints = {
        "num-layers": 1, "hidden-size": 4096, "ffn-hidden-size": 16384, "seq-length": 64, "micro-batch-size": 1,
        "global-batch-size": 0, "train-iters": 10, "eval-iters": 1, "exit-duration-in-mins": 0, "lr-warmup-iters": 0,
        "tensor-model-parallel-size": 1, "pipeline-model-parallel-size": 1, "distributed-timeout-minutes": 10,
        "vocab-size": MAX_VOCAB, "log-interval": 10, "seed": 1234, "lr-decay-iters": 0,
    }  # fmt: skip
    for name, default in ints.items():
        p.add_argument(f"--{name}", type=int, default=default)
    floats = {
        "lr": 6e-4,
        "min-lr": 0.0,
        "weight-decay": 0.01,
        "clip-grad": 1.0,
        "adam-beta1": 0.9,
        "adam-beta2": 0.999,
        "init-method-std": 0.02,
    }
    for name, default in floats.items():
        p.add_argument(f"--{name}", type=float, default=default)
    p.add_argument("--lr-decay-style", default="linear", choices=("constant", "linear", "cosine"))
    return p


# ---------------------------------------------------------------- communication over TCP


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(struct.pack("!Q", len(payload)) + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("a peer closed its connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> bytes:
    (size,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return _recv_exact(sock, size)


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    """Connect, retrying while the name does not resolve yet or nobody listens yet."""
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=10)
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            if time.monotonic() > deadline:
                raise ConnectionError(f"cannot reach {host}:{port}: {exc}") from None
            time.sleep(0.5)


def _serve_table(server: socket.socket, world: int, timeout: float) -> None:
    """Rank 0's store: collect every rank's ring address, then hand the whole table to each.
    Ranks that do not all arrive within ``timeout`` leave the others waiting until theirs ends."""
    members: list[tuple[socket.socket, dict[str, object]]] = []
    server.settimeout(timeout)
    while len(members) < world:
        try:
            conn, _ = server.accept()
        except OSError:
            break
        members.append((conn, json.loads(_recv(conn))))
    table = json.dumps(sorted((m for _, m in members), key=lambda m: int(str(m["rank"])))).encode()
    for conn, _ in members:
        _send(conn, table)
        conn.close()
    server.close()


class Mesh:
    """This rank's TCP links: one listener, and a connection to and from each ring neighbour of
    each group it belongs to."""

    def __init__(self, rank: int, world: int, master: tuple[str, int], timeout: float) -> None:
        self.rank, self.world = rank, world
        self._deadline = time.monotonic() + timeout
        self._listener = socket.create_server(("0.0.0.0", 0), backlog=64)
        if rank == 0:
            store = socket.create_server(("0.0.0.0", master[1]), backlog=max(64, world))
            threading.Thread(target=_serve_table, args=(store, world, timeout), daemon=True).start()
        with _connect(*master, self._deadline) as link:
            link.settimeout(timeout)
            host = link.getsockname()[0]  # the address the other pods reach this one on
            _send(link, json.dumps({"rank": rank, "host": host, "port": self._listener.getsockname()[1]}).encode())
            self.table = json.loads(_recv(link))
        self.outgoing: dict[tuple[str, int], socket.socket] = {}
        self.incoming: dict[tuple[str, int], socket.socket] = {}
        # A peer that stops answering fails this rank after the distributed timeout, never hangs it.
        self.timeout = timeout

    def link_rings(self, groups: dict[str, list[int]]) -> None:
        """Connect to the next member of each group and accept the previous one's connection."""
        wanted = 0
        for tag, members in groups.items():
            if len(members) < 2:
                continue
            wanted += 1
            nxt = members[(members.index(self.rank) + 1) % len(members)]
            peer = self.table[nxt]
            sock = _connect(str(peer["host"]), int(peer["port"]), self._deadline)
            sock.settimeout(self.timeout)
            _send(sock, json.dumps({"tag": tag, "from": self.rank}).encode())
            self.outgoing[(tag, nxt)] = sock
        self._listener.settimeout(max(1.0, self._deadline - time.monotonic()))
        while len(self.incoming) < wanted:
            conn, _ = self._listener.accept()
            conn.settimeout(self.timeout)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            hello = json.loads(_recv(conn))
            self.incoming[(str(hello["tag"]), int(hello["from"]))] = conn
        self._listener.close()


class Group:
    """A ring of ranks summing arrays over TCP: reduce-scatter, then all-gather."""

    def __init__(self, mesh: Mesh, tag: str, members: list[int]) -> None:
        self.size = len(members)
        self.index = members.index(mesh.rank)
        if self.size > 1:
            nxt = members[(self.index + 1) % self.size]
            prev = members[(self.index - 1) % self.size]
            self._to, self._from = mesh.outgoing[(tag, nxt)], mesh.incoming[(tag, prev)]
        self.bytes_sent = 0

    def _exchange(self, outgoing: np.ndarray, like: np.ndarray) -> np.ndarray:
        payload = np.ascontiguousarray(outgoing).tobytes()
        failures: list[OSError] = []

        def send() -> None:
            try:
                _send(self._to, payload)
            except OSError as exc:  # reported by the receiving side below, never as a thread traceback
                failures.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        received = np.frombuffer(_recv(self._from), dtype=like.dtype)
        sender.join()
        if failures:
            raise ConnectionError(f"sending to the next rank failed: {failures[0]}")
        self.bytes_sent += len(payload)
        return received

    def all_reduce(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum of ``array`` over the group (every member gets it)."""
        if self.size == 1:
            return array
        flat = array.astype(np.float32).ravel().copy()
        chunks = np.array_split(flat, self.size)
        n, i = self.size, self.index
        for step in range(n - 1):
            send_at, recv_at = (i - step) % n, (i - step - 1) % n
            chunks[recv_at] = chunks[recv_at] + self._exchange(chunks[send_at], chunks[recv_at])
        for step in range(n - 1):
            send_at, recv_at = (i + 1 - step) % n, (i - step) % n
            chunks[recv_at] = self._exchange(chunks[send_at], chunks[recv_at]).copy()
        return np.concatenate(chunks).reshape(array.shape)


# ---------------------------------------------------------------- the model and its data


class MockData:
    """Token sequences where each token is, nine times in ten, a fixed function of the one before."""

    def __init__(self, vocab: int, seq: int, seed: int) -> None:
        self.vocab, self.seq = vocab, seq
        self.rule = np.random.default_rng(seed).permutation(vocab)
        self.rng = np.random.default_rng(seed + 7919)

    def batch(self, size: int) -> np.ndarray:
        tokens = np.empty((size, self.seq + 1), dtype=np.int64)
        tokens[:, 0] = self.rng.integers(0, self.vocab, size)
        for t in range(1, self.seq + 1):
            noise = self.rng.random(size) < NOISE
            tokens[:, t] = np.where(noise, self.rng.integers(0, self.vocab, size), self.rule[tokens[:, t - 1]])
        return tokens


class Model:
    """Embedding, a tensor-parallel feed-forward block with a residual, an output layer."""

    def __init__(self, vocab: int, hidden: int, ffn_shard: int, std: float, seed: int, tp_rank: int) -> None:
        shared = np.random.default_rng(seed)
        own = np.random.default_rng(seed + 1 + tp_rank)
        self.params = {
            "embedding": shared.normal(0, std, (vocab, hidden)).astype(np.float32),
            "fc1": own.normal(0, std, (hidden, ffn_shard)).astype(np.float32),
            "fc2": own.normal(0, std, (ffn_shard, hidden)).astype(np.float32),
            "output": shared.normal(0, std, (hidden, vocab)).astype(np.float32),
        }
        self.sharded = ("fc1", "fc2")

    def flops_per_token(self) -> int:
        """Multiply-adds of the matrix products, forward and backward (three times forward), as FLOPs."""
        p = self.params
        return 3 * 2 * (p["fc1"].size + p["fc2"].size + p["output"].size)

    def loss_and_grads(self, tokens: np.ndarray, tp_sum: Callable[[np.ndarray], np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
        """Mean next-token cross-entropy of ``tokens`` and this rank's gradients."""
        p = self.params
        inputs, targets = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
        x = p["embedding"][inputs]
        pre = x @ p["fc1"]
        act = np.maximum(pre, 0.0)
        y = x + tp_sum(act @ p["fc2"])  # row-parallel: partial products summed over the group
        logits = y @ p["output"]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        count = len(targets)
        loss = float(-np.log(probs[np.arange(count), targets] + 1e-12).mean())
        dlogits = probs
        dlogits[np.arange(count), targets] -= 1.0
        dlogits /= count
        grads = {"output": y.T @ dlogits}
        dy = dlogits @ p["output"].T
        grads["fc2"] = act.T @ dy
        dpre = (dy @ p["fc2"].T) * (pre > 0)
        grads["fc1"] = x.T @ dpre
        dx = dy + tp_sum(dpre @ p["fc1"].T)  # column-parallel input: its gradient summed over the group
        embedding = np.zeros_like(p["embedding"])
        np.add.at(embedding, inputs, dx)
        grads["embedding"] = embedding
        return loss, grads


class Adam:
    """Adam with decoupled weight decay, as Megatron's optimizer applies it."""

    def __init__(self, params: dict[str, np.ndarray], beta1: float, beta2: float, decay: float) -> None:
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.beta1, self.beta2, self.decay, self.step = beta1, beta2, decay, 0

    def apply(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray], lr: float) -> None:
        self.step += 1
        for key, grad in grads.items():
            self.m[key] = self.beta1 * self.m[key] + (1 - self.beta1) * grad
            self.v[key] = self.beta2 * self.v[key] + (1 - self.beta2) * grad * grad
            m_hat = self.m[key] / (1 - self.beta1**self.step)
            v_hat = self.v[key] / (1 - self.beta2**self.step)
            params[key] -= lr * (m_hat / (np.sqrt(v_hat) + 1e-8) + self.decay * params[key])


def learning_rate(args: argparse.Namespace, iteration: int) -> float:
    """Megatron's schedule: linear warm-up, then decay to ``--min-lr`` by ``--lr-decay-iters``
    (the training's length when unset)."""
    if args.lr_warmup_iters and iteration <= args.lr_warmup_iters:
        return float(args.lr * iteration / args.lr_warmup_iters)
    span = max(1, (args.lr_decay_iters or args.train_iters) - args.lr_warmup_iters)
    done = min(1.0, (iteration - args.lr_warmup_iters) / span)
    if args.lr_decay_style == "constant":
        return float(args.lr)
    factor = 0.5 * (1 + math.cos(math.pi * done)) if args.lr_decay_style == "cosine" else 1 - done
    return float(args.min_lr + (args.lr - args.min_lr) * factor)


# ---------------------------------------------------------------- the run


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def check(args: argparse.Namespace, world: int) -> tuple[int, int]:
    """(tensor-parallel size, data-parallel size), or why this configuration cannot run."""
    given = [name for name in REFUSED if getattr(args, name.replace("-", "_")) is not None]
    if given:
        raise StandInError(f"checkpointing (--{given[0]}) is not modelled by the CPU stand-in")
    if args.pipeline_model_parallel_size != 1:
        raise StandInError("pipeline parallelism is not modelled by the CPU stand-in (--pipeline-model-parallel-size must be 1)")
    tp = args.tensor_model_parallel_size
    if tp < 1 or world % tp:
        raise StandInError(f"world size ({world}) is not divisible by tensor parallel size ({tp})")
    for name in ("train_iters", "micro_batch_size", "log_interval", "hidden_size", "ffn_hidden_size", "vocab_size", "seq_length"):
        if getattr(args, name) < 1:
            raise StandInError(f"--{name.replace('_', '-')} must be at least 1")
    dp = world // tp
    gbs = args.global_batch_size or args.micro_batch_size * dp
    if gbs % (args.micro_batch_size * dp):
        raise StandInError(
            f"global batch size ({gbs}) is not divisible by micro batch size ({args.micro_batch_size}) times data parallel size ({dp})"
        )
    args.global_batch_size = gbs
    return tp, dp


def log_line(iteration: int, args: argparse.Namespace, elapsed_ms: float, tflops: float, lr: float, loss: float, grad_norm: float) -> str:
    return (
        f" [{now()}] iteration {iteration:8d}/{args.train_iters:8d} |"
        f" consumed samples: {iteration * args.global_batch_size:12d} |"
        f" elapsed time per iteration (ms): {elapsed_ms:.1f} |"
        f" throughput per GPU (TFLOP/s/GPU): {tflops:.6f} |"
        f" learning rate: {lr:.6E} |"
        f" global batch size: {args.global_batch_size:5d} |"
        f" lm loss: {loss:.6E} |"
        f" loss scale: 1.0 |"
        f" grad norm: {grad_norm:.3f} |"
        f" number of skipped iterations:   0 |"
        f" number of nan iterations:   0 |"
    )


# Long: one training loop (setup, steps, logging, evaluation) reads best in one piece.
def train(args: argparse.Namespace, rank: int, world: int, master: tuple[str, int]) -> int:
    tp, dp = check(args, world)
    started = time.monotonic()
    if rank == 0:
        print(
            f"using world size: {world}, data-parallel size: {dp}, context-parallel size: 1, "
            f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {tp}, pipeline-model-parallel size: 1",
            flush=True,
        )
    vocab, seq = min(args.vocab_size, MAX_VOCAB), min(args.seq_length, MAX_SEQ)
    hidden = max(8, args.hidden_size // SHAPE_DIVISOR)
    ffn = max(tp * 4, args.ffn_hidden_size // SHAPE_DIVISOR // tp * tp)
    tp_rank, dp_rank = rank % tp, rank // tp
    mesh = Mesh(rank, world, master, args.distributed_timeout_minutes * 60.0)
    tp_members = [dp_rank * tp + i for i in range(tp)]
    dp_members = [i * tp + tp_rank for i in range(dp)]
    mesh.link_rings({f"tp{dp_rank}": tp_members, f"dp{tp_rank}": dp_members})
    tp_group, dp_group = Group(mesh, f"tp{dp_rank}", tp_members), Group(mesh, f"dp{tp_rank}", dp_members)
    if rank == 0:
        print(
            f"> CPU stand-in model (no GPU, no PyTorch): vocab {vocab}, sequence {seq}, hidden {hidden}, "
            f"ffn {ffn} over {tp} tensor-parallel ranks, {dp} data-parallel replicas, float32 on NumPy",
            flush=True,
        )
    model = Model(vocab, hidden, ffn // tp, args.init_method_std, args.seed, tp_rank)
    optimizer = Adam(model.params, args.adam_beta1, args.adam_beta2, args.weight_decay)
    data = MockData(vocab, seq, args.seed + 1000 * dp_rank)
    micro_batches = args.global_batch_size // (args.micro_batch_size * dp)
    flops = model.flops_per_token() * args.micro_batch_size * seq * micro_batches
    last = world - 1
    window_time, window_loss, window_steps = 0.0, 0.0, 0
    for iteration in range(1, args.train_iters + 1):
        begin = time.perf_counter()
        total: dict[str, np.ndarray] = {k: np.zeros_like(v) for k, v in model.params.items()}
        losses = []
        for _ in range(micro_batches):
            loss, grads = model.loss_and_grads(data.batch(args.micro_batch_size), tp_group.all_reduce)
            losses.append(loss)
            for key, grad in grads.items():
                total[key] += grad / micro_batches
        for key in total:
            total[key] = dp_group.all_reduce(total[key]) / dp
        squares = sum(float((g * g).sum()) for k, g in total.items() if k in model.sharded)
        squares = float(tp_group.all_reduce(np.array([squares], dtype=np.float32))[0])
        squares += sum(float((g * g).sum()) for k, g in total.items() if k not in model.sharded)
        grad_norm = math.sqrt(squares)
        if args.clip_grad > 0 and grad_norm > args.clip_grad:
            for key in total:
                total[key] *= args.clip_grad / grad_norm
        lr = learning_rate(args, iteration)
        optimizer.apply(model.params, total, lr)
        mean_loss = float(dp_group.all_reduce(np.array([sum(losses) / len(losses)], dtype=np.float32))[0]) / dp
        window_time += time.perf_counter() - begin
        window_loss += mean_loss
        window_steps += 1
        if iteration % args.log_interval == 0 or iteration == args.train_iters:
            step_s = window_time / window_steps
            if rank == last:
                print(
                    log_line(iteration, args, step_s * 1000, flops / step_s / 1e12, lr, window_loss / window_steps, grad_norm), flush=True
                )
            window_time, window_loss, window_steps = 0.0, 0.0, 0
        if args.exit_duration_in_mins and time.monotonic() - started > args.exit_duration_in_mins * 60:
            if rank == 0:
                print(f"exiting program after {(time.monotonic() - started) / 60:.2f} minutes", flush=True)
            return 0
    eval_losses = [model.loss_and_grads(data.batch(args.micro_batch_size), tp_group.all_reduce)[0] for _ in range(max(1, args.eval_iters))]
    eval_loss = float(dp_group.all_reduce(np.array([sum(eval_losses) / len(eval_losses)], dtype=np.float32))[0]) / dp
    if rank == last:
        print(
            f" validation loss at iteration {args.train_iters} on validation set | lm loss value: {eval_loss:.6E} |"
            f" lm loss PPL: {math.exp(min(eval_loss, 20.0)):.6E} |",
            flush=True,
        )
    return 0


def main(argv: list[str]) -> int:
    args, unknown = parser().parse_known_args(argv)
    if unknown:
        print(f"pretrain_gpt.py (CPU stand-in): unrecognized arguments: {' '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        master = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    except (KeyError, ValueError) as exc:
        print(
            f"pretrain_gpt.py (CPU stand-in): start it with torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): {exc}", file=sys.stderr
        )
        return 2
    try:
        return train(args, rank, world, master)
    except StandInError as exc:
        print(f"pretrain_gpt.py (CPU stand-in): {exc}", file=sys.stderr)
        return 2
    except (ConnectionError, OSError) as exc:
        print(f"pretrain_gpt.py (CPU stand-in): rank {rank}: the process group failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

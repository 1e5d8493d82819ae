"""In-context linear-regression tasks (paper Eq. (7); docs/maths.md#task); plain numpy.

The sampling protocol reproduces the seed log bit for bit: one ``numpy.random.default_rng(seed)``
draws, in this order, ``W`` (n_pairs, d), the prompt covariates (n_pairs, l_max, d) and the query
covariates (n_pairs, n_query, d); tasks are stacked ``[w; -w]`` with shared covariates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOKEN_KINDS = ("gauss", "rademacher")


def check_sigma(sigma, d: int | None = None) -> np.ndarray:
    """Return ``sigma`` as a (d, d) float64 array, or raise if it is not symmetric positive definite."""
    s = np.asarray(sigma, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"sigma must be a square matrix, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("sigma must have finite entries")
    if d is not None and s.shape[0] != d:
        raise ValueError(f"sigma has shape {s.shape}, expected ({d}, {d})")
    if not np.allclose(s, s.T, rtol=0, atol=1e-12):
        raise ValueError("sigma must be symmetric")
    if np.linalg.eigvalsh(s).min() <= 0:
        raise ValueError("sigma must be positive definite (smallest eigenvalue <= 0)")
    return s


def sqrtm_sym(sigma: np.ndarray) -> np.ndarray:
    """Symmetric square root ``Sigma^{1/2}`` by eigendecomposition; (d, d)."""
    evals, evecs = np.linalg.eigh(sigma)
    return evecs @ np.diag(np.sqrt(evals)) @ evecs.T


@dataclass(frozen=True, eq=False)
class Tasks:
    """A set of antithetic tasks: ``x`` (n_tasks, l_max, d), ``w`` (n_tasks, d), ``xq`` (n_tasks, n_query, d)."""

    x: np.ndarray
    w: np.ndarray
    xq: np.ndarray
    sigma: np.ndarray
    token_kind: str = "gauss"
    seed: int = -1

    @property
    def n_tasks(self) -> int:
        return self.w.shape[0]

    @property
    def n_pairs(self) -> int:
        return self.n_tasks // 2

    @property
    def d(self) -> int:
        return self.w.shape[1]

    @property
    def l_max(self) -> int:
        return self.x.shape[1]

    @property
    def n_query(self) -> int:
        return self.xq.shape[1]

    @property
    def antithetic(self) -> bool:
        """Whether the second half of the tasks is the first with ``-w`` and the same prompts and
        queries (:func:`sample`'s layout: a pair's partners share their covariates)."""
        n, h = self.n_tasks, self.n_tasks // 2
        return bool(n % 2 == 0 and np.array_equal(self.w[h:], -self.w[:h]) and np.array_equal(self.x[h:], self.x[:h])
                    and np.array_equal(self.xq[h:], self.xq[:h]))

    @property
    def n_distinct(self) -> int:
        """How many tasks hold distinct prompts and queries: ``n_tasks / 2`` for :attr:`antithetic` tasks
        (a pair's partners share them), else ``n_tasks``."""
        return self.n_tasks // 2 if self.antithetic else self.n_tasks

    @property
    def y(self) -> np.ndarray:
        """Prompt labels ``y_l = w^T x_l``; (n_tasks, l_max)."""
        return np.einsum("tld,td->tl", self.x, self.w)

    @property
    def yq(self) -> np.ndarray:
        """Query targets ``y_q = w^T x_q``; (n_tasks, n_query)."""
        return np.einsum("tqd,td->tq", self.xq, self.w)

    def save(self, path) -> None:
        """Write the tasks to an ``.npz`` file (atomically: a temporary file, then a rename)."""
        from .io import save_npz

        save_npz(path, x=self.x, w=self.w, xq=self.xq, sigma=self.sigma,
                 token_kind=np.array(self.token_kind), seed=np.array(self.seed))

    @classmethod
    def load(cls, path) -> "Tasks":
        """Read tasks written by :meth:`save` (a damaged file is set aside and named:
        :class:`softlin.outputs.DamagedOutput`)."""
        import zipfile

        from .outputs import DamagedOutput, damaged, is_output, verified

        try:
            with np.load(verified(path)) as f:
                return cls(x=f["x"], w=f["w"], xq=f["xq"], sigma=f["sigma"],
                           token_kind=str(f["token_kind"]), seed=int(f["seed"]))
        except (zipfile.BadZipFile, EOFError, KeyError, ValueError, OSError) as err:
            if isinstance(err, (FileNotFoundError, DamagedOutput)) or not is_output(path):
                raise
            raise damaged(path, f"it does not read as tasks: {type(err).__name__}: {err}") from err


def _paired_covariates(rng, n_pairs: int, l_max: int, sigma, token_kind: str) -> np.ndarray:
    """The prompts' covariates of ``n_pairs`` antithetic pairs, drawn from ``rng`` (Gaussian ``N(0, sigma)``
    or Rademacher), each pair's twice: (2 n_pairs, l_max, d), both halves written in place (C1's 50 MB
    blocks); an identity ``sigma``'s product skipped (``x @ I`` is ``x``, bit for bit)."""
    d = np.shape(sigma)[0]
    x = np.empty((2 * n_pairs, l_max, d))
    if token_kind == "gauss":
        root = sqrtm_sym(sigma)
        if np.array_equal(root, np.eye(d)):
            rng.standard_normal(out=x[:n_pairs])
        else:
            np.matmul(rng.standard_normal((n_pairs, l_max, d)), root, out=x[:n_pairs])
    else:
        x[:n_pairs] = rng.integers(0, 2, size=(n_pairs, l_max, d)) * 2 - 1
    x[n_pairs:] = x[:n_pairs]
    return x


def sample(seed: int, d: int, sigma, n_pairs: int, n_query: int, l_max: int,
           token_kind: str = "gauss") -> Tasks:
    """Draw ``2 n_pairs`` antithetic tasks (docs/maths.md#sampling); task ``n_pairs + i`` has ``w = -w_i``."""
    for name, val in (("d", d), ("n_pairs", n_pairs), ("n_query", n_query), ("l_max", l_max)):
        if int(val) != val or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    if token_kind not in TOKEN_KINDS:
        raise ValueError(f"token_kind must be one of {TOKEN_KINDS}, got {token_kind!r}")
    sigma = check_sigma(sigma, d)
    if token_kind == "rademacher" and not np.array_equal(sigma, np.eye(d)):
        raise ValueError("Rademacher tokens have covariance I: sigma must be the identity")
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_pairs, d))
    x = _paired_covariates(rng, n_pairs, l_max, sigma, token_kind)
    if token_kind == "gauss":
        xq = rng.standard_normal((n_pairs, n_query, d)) @ sqrtm_sym(sigma)
    else:
        xq = (rng.integers(0, 2, size=(n_pairs, n_query, d)) * 2 - 1).astype(np.float64)
    return Tasks(x=x, w=np.concatenate([w, -w]),
                 xq=np.concatenate([xq, xq]), sigma=sigma, token_kind=token_kind, seed=int(seed))


def redraw_prompts(tasks: Tasks, seed: int) -> Tasks:
    """The same task vectors and queries with fresh prompt covariates from ``default_rng(seed)``, drawn
    as :func:`sample` draws them (antithetic partners share them); (n_pairs, l_max, d) per half."""
    n, l_max, d = tasks.x.shape
    if not tasks.antithetic:
        raise ValueError("redraw_prompts needs antithetic tasks (the second half the first with -w)")
    x = _paired_covariates(np.random.default_rng(seed), n // 2, l_max, tasks.sigma, tasks.token_kind)
    return Tasks(x=x, w=tasks.w, xq=tasks.xq, sigma=tasks.sigma,
                 token_kind=tasks.token_kind, seed=int(seed))

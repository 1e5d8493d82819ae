"""Shared sympy tools: Wick/Isserlis expectations, explicit symbolic matrices, matrix calculus, printers."""
from __future__ import annotations

import functools

import sympy as sp


def sym_matrix(name: str, n: int, m: int | None = None, symmetric: bool = False) -> sp.Matrix:
    """Explicit n x m matrix of real symbols name_ij (symmetric: name_ij = name_ji)."""
    m = n if m is None else m
    def ent(i, j):
        if symmetric and i > j:
            i, j = j, i
        return sp.Symbol(f"{name}_{i}{j}", real=True)
    return sp.Matrix(n, m, lambda i, j: ent(i, j))


def sym_vector(name: str, n: int) -> sp.Matrix:
    """Explicit column vector of real symbols name_i."""
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"{name}_{i}", real=True))


def wick_moment(idx: tuple, cov) -> sp.Expr:
    """Isserlis: E[g_{i1} ... g_{in}] for g ~ N(0, cov), as a sum over pairings."""
    @functools.lru_cache(maxsize=None)
    def rec(t):
        if not t:
            return sp.Integer(1)
        if len(t) % 2:
            return sp.Integer(0)
        first, rest = t[0], t[1:]
        return sp.Add(*[cov[first, rest[k]] * rec(rest[:k] + rest[k + 1:]) for k in range(len(rest))])
    return rec(tuple(idx))


def gaussian_expectation(expr: sp.Expr, variables: list, cov) -> sp.Expr:
    """E[expr] for a polynomial expr in `variables` ~ N(0, cov), monomial by monomial (Isserlis)."""
    poly = sp.Poly(sp.expand(expr), *variables)
    total = []
    for exps, coeff in poly.terms():
        idx = tuple(i for i, e in enumerate(exps) for _ in range(e))
        total.append(coeff * wick_moment(idx, cov))
    return sp.expand(sp.Add(*total))


def pairings(items: list):
    """All perfect matchings of an even-length list."""
    if not items:
        yield []
        return
    a = items[0]
    for k in range(1, len(items)):
        rest = items[1:k] + items[k + 1:]
        for p in pairings(rest):
            yield [(a, items[k])] + p


def contract_pairing(mats: list, pairing: list, cov=None) -> sp.Expr:
    """Trace form of sum_idx prod_k M_k[i_{2k}, i_{2k+1}] with slots identified by `pairing`
    (each identification weighted by the symmetric ``cov``, a MatrixSymbol, when given)."""
    partner = {}
    for a, b in pairing:
        partner[a], partner[b] = b, a
    seen, result = set(), sp.Integer(1)
    for start in range(2 * len(mats)):
        if start in seen:
            continue
        prod, slot = [], start
        while slot not in seen:
            k, is_row = divmod(slot, 2)[0], slot % 2 == 0
            other = slot + 1 if is_row else slot - 1
            seen.update((slot, other))
            prod.append(mats[k] if is_row else mats[k].T)
            if cov is not None:  # one contraction E[x_a x_b] = cov_ab between consecutive slots
                prod.append(cov)
            slot = partner[other]
        result *= sp.Trace(sp.MatMul(*prod)) if len(prod) > 1 else sp.Trace(prod[0])
    return result


def quadratic_form_moment(M, power: int) -> sp.Expr:
    """E[(w^T M w)^power] for w ~ N(0, I_d), generic d: Isserlis pairings turned into traces."""
    mats = [M] * power
    return sp.Add(*[contract_pairing(mats, p) for p in pairings(list(range(2 * power)))])


def quadratic_forms_moment(mats: list, cov) -> sp.Expr:
    """E[prod_k x^T M_k x] for x ~ N(0, cov), generic d: Isserlis pairings of the 2k slots as traces."""
    return sp.Add(*[contract_pairing(list(mats), p, cov) for p in pairings(list(range(2 * len(mats))))])


def expand_traces(expr):
    """Distribute Trace over sums and pull scalar factors out, so traces hold pure matrix products."""
    def tr(arg):
        arg = sp.expand(arg)
        if isinstance(arg, sp.MatAdd):
            return sp.Add(*[tr(a) for a in arg.args])
        if isinstance(arg, sp.MatMul):
            scal, mats = arg.as_coeff_matrices()
            return scal * sp.Trace(sp.MatMul(*mats)) if mats else scal
        if isinstance(arg, sp.Identity):
            return arg.rows
        return sp.Trace(arg)
    return sp.expand(expr.replace(lambda e: isinstance(e, sp.Trace), lambda e: tr(e.arg)))


def matrix_grad(expr, X):
    """d expr / dX for a scalar expr built of traces (term by term: sympy's Add rule is unreliable)."""
    terms = sp.Add.make_args(expand_traces(expr))
    parts = [t.diff(X) for t in terms]
    parts = [p for p in parts if not (p == 0 or getattr(p, "is_ZeroMatrix", False))]
    return sp.MatAdd(*parts).doit() if parts else sp.ZeroMatrix(*X.shape)


def scalar_grad(expr, s):
    """d expr / ds for a scalar symbol s appearing outside traces (after expand_traces)."""
    e = expand_traces(expr)
    traces = list(e.atoms(sp.Trace))
    dummies = [sp.Dummy() for _ in traces]
    e2 = e.xreplace(dict(zip(traces, dummies)))
    return sp.diff(e2, s).xreplace(dict(zip(dummies, traces)))


def symmetrize(expr, S):
    """Use S^T = S (covariance matrices are symmetric)."""
    out = expr.xreplace({S.T: S})
    return out.doit() if isinstance(out, sp.MatrixExpr) else out


def explicit(expr, subs: dict):
    """Replace MatrixSymbols by explicit matrices and evaluate to an explicit sympy expression."""
    out = expr.xreplace(subs)
    out = out.doit()
    if isinstance(out, sp.Basic):  # traces of explicit matrices that doit() left alone
        out = out.replace(lambda e: isinstance(e, sp.Trace) and not e.arg.atoms(sp.MatrixSymbol),
                          lambda e: e.arg.as_explicit().trace())
    if isinstance(out, sp.MatrixBase) and out.shape == (1, 1):
        out = out[0, 0]
    return sp.expand(out)


def is_zero(expr) -> bool:
    """Exact zero test: expand, then simplify if needed."""
    if getattr(expr, "is_ZeroMatrix", False):
        return True
    if isinstance(expr, sp.MatrixExpr) and all(getattr(n, "is_Integer", False) for n in expr.shape):
        expr = expr.as_explicit()
    if isinstance(expr, sp.MatrixBase):
        return all(is_zero(e) for e in expr)
    e = sp.expand(expr)
    if e == 0:
        return True
    if e.is_rational_function():
        return sp.cancel(sp.together(e)) == 0
    return sp.simplify(e) == 0


class LambdaMax(sp.Function):
    """Largest eigenvalue of a square matrix with a real spectrum (printed as max(real(eigvals)))."""

    nargs = 1
    is_real = True


@functools.lru_cache(maxsize=None)
def printer_class(backend: str):
    """NumPy / JAX code printer that also knows Trace."""
    from sympy.printing.numpy import JaxPrinter, NumPyPrinter
    base = {"numpy": NumPyPrinter, "jax": JaxPrinter}[backend]

    class TracePrinter(base):
        def _print_Trace(self, e):
            return f"{self._module_format(self._module + '.trace')}({self._print(e.arg)})"

        def _print_Determinant(self, e):
            return f"{self._module_format(self._module + '.linalg.det')}({self._print(e.arg)})"

        def _print_Identity(self, e):  # symbolic size: the size symbol is an argument of the function
            return f"{self._module_format(self._module + '.eye')}({self._print(e.rows)})"

        def _print_LambdaMax(self, e):
            eig = self._module_format(self._module + '.linalg.eigvals')
            return f"{self._module_format(self._module + '.max')}({eig}({self._print(e.args[0])}).real)"

    return TracePrinter


def lambdify(args, expr, backend: str = "numpy"):
    """sympy.lambdify with the Trace-aware printer for backend 'numpy' or 'jax'."""
    if backend not in ("numpy", "jax"):
        raise ValueError(f"backend must be 'numpy' or 'jax', got {backend!r}")
    return sp.lambdify(args, expr, modules=backend, printer=printer_class(backend), cse=False)


def xnp(backend: str):
    """numpy or jax.numpy (jax imported lazily)."""
    if backend == "jax":
        import jax.numpy as jnp
        return jnp
    import numpy as np
    return np

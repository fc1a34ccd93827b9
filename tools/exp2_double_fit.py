#!/usr/bin/env python3
"""The coefficients of exp2_nonpositive's polynomial for double (flash_micro_kernels.hpp,
exp2_double_coefficients): 2^r = 1 + r * q(r) on r in [-1/2, 1/2], q of degree DEGREE - 1 the
Chebyshev interpolant of (2^r - 1) / r, computed with 80 significant digits (q's values by their
series, so that nothing cancels at r near 0) and rounded to double.

    python3 tools/exp2_double_fit.py                  # print the coefficients, highest degree first
    python3 tools/exp2_double_fit.py --check HEADER   # exit 1 unless HEADER's array holds them

ctest tools.exp2_double_fit runs the check against include/argus/kernel/flash_micro_kernels.hpp.
(docs/performance.md, "Double's exponential in registers": degree 11, the header's, is within 0.9
ulp of 2^x as the kernel evaluates it; degree 10 4.4 ulp, degree 12 no better than 11.)
"""
import argparse
import re
import sys
from decimal import Decimal, getcontext

DEGREE = 11  # of p(r) = 1 + r q(r)
getcontext().prec = 80
LN2 = Decimal(2).ln()


def q_of(r):
    """(2^r - 1) / r = sum_{k >= 1} ln2^k r^(k - 1) / k!, to the context's precision."""
    total, term, k = Decimal(0), LN2, 1
    while True:
        bigger = total + term
        if bigger == total:
            return total
        total, k = bigger, k + 1
        term = term * r * LN2 / k


def cos(x):
    """cos x by its series (|x| <= pi here)."""
    total, term, k = Decimal(1), Decimal(1), 0
    while True:
        k += 2
        term = -term * x * x / (k * (k - 1))
        bigger = total + term
        if bigger == total:
            return total
        total = bigger


def pi():
    """pi by Machin's formula."""
    def arctan_inverse(n):
        total, power, k = Decimal(0), Decimal(1) / n, 0
        while True:
            term = power / (2 * k + 1) * (-1 if k % 2 else 1)
            if total + term == total:
                return total
            total += term
            power /= n * n
            k += 1
    return 4 * (4 * arctan_inverse(5) - arctan_inverse(239))


def coefficients(degree=DEGREE):
    """p's coefficients as doubles, highest degree first, the last 1."""
    nodes_count = degree  # q has degree - 1, so degree nodes
    nodes = [Decimal("0.5") * cos(pi() * (2 * j + 1) / (2 * nodes_count)) for j in range(nodes_count)]
    # The Vandermonde system for q's monomial coefficients, solved by Gauss-Jordan elimination.
    rows = [[x ** i for i in range(nodes_count)] + [q_of(x)] for x in nodes]
    for c in range(nodes_count):
        pivot = max(range(c, nodes_count), key=lambda r: abs(rows[r][c]))
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for r in range(nodes_count):
            if r != c:
                f = rows[r][c] / rows[c][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[c])]
    q = [rows[i][nodes_count] / rows[i][i] for i in range(nodes_count)]  # ascending powers
    return [float(x) for x in reversed(q)] + [1.0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", metavar="HEADER", help="compare with HEADER's exp2_double_coefficients")
    args = ap.parse_args()
    fitted = coefficients()
    if not args.check:
        print(", ".join(repr(c) for c in fitted))
        return 0
    with open(args.check, encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"exp2_double_coefficients\[\]\s*=\s*\{([^}]*)\}", text)
    if found is None:
        print(f"exp2_double_fit: no exp2_double_coefficients array in {args.check}")
        return 1
    held = [float(x) for x in found.group(1).replace("\n", " ").split(",") if x.strip()]
    if held != fitted:
        print(f"exp2_double_fit: {args.check} holds {held},\n  the fit gives {fitted}")
        return 1
    print(f"exp2_double_fit: {args.check} holds the {len(fitted)} coefficients of the fit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

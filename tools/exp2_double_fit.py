#!/usr/bin/env python3
"""The coefficients of argus's polynomials for double's exponentials, p(r) = 1 + r * q(r), q of
degree DEGREE - 1 the Chebyshev interpolant of (p's function - 1) / r, computed with 80
significant digits (q's values by their series, so that nothing cancels at r near 0) and rounded
to double:

    exp2_double_coefficients (kernel/flash_micro_kernels.hpp, exp2_nonpositive, the fused loop
        nests): 2^r on r in [-1/2, 1/2];
    exp_double_coefficients (kernel/simd.hpp, exp, the unfused softmax): e^r on |r| <= ln2/2.

    python3 tools/exp2_double_fit.py                  # print each array, highest degree first
    python3 tools/exp2_double_fit.py --check KERNEL   # exit 1 unless the headers in the directory
                                                      # KERNEL (include/argus/kernel) hold them

ctest tools.exp2_double_fit runs the check. Degree 11 for both: within 0.9 ulp of the function as
the kernels evaluate it; degree 10 4.4 ulp for 2^x and 4.7 for e^x, degree 12 hardly better than
11 (docs/performance.md, "Double's exponential in registers" and "The unfused softmax's exponential
in double").
"""
import argparse
import os
import re
import sys
from decimal import Decimal, getcontext

DEGREE = 11  # of p(r) = 1 + r q(r)
getcontext().prec = 80
LN2 = Decimal(2).ln()


def series_q(base_log):
    """r -> (b^r - 1) / r = sum_{k >= 1} L^k r^(k - 1) / k! for L = ln b, to the context's
    precision."""
    def q_of(r):
        total, term, k = Decimal(0), base_log, 1
        while True:
            bigger = total + term
            if bigger == total:
                return total
            total, k = bigger, k + 1
            term = term * r * base_log / k
    return q_of


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


def coefficients(q_of, half_width, degree=DEGREE):
    """p's coefficients as doubles, highest degree first, the last 1: q interpolated at the
    Chebyshev nodes of [-half_width, half_width]."""
    nodes_count = degree  # q has degree - 1, so degree nodes
    nodes = [half_width * cos(pi() * (2 * j + 1) / (2 * nodes_count)) for j in range(nodes_count)]
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


# (array, header in include/argus/kernel, q, half width of r's interval)
FITS = [
    ("exp2_double_coefficients", "flash_micro_kernels.hpp", series_q(LN2), Decimal("0.5")),
    ("exp_double_coefficients", "simd.hpp", series_q(Decimal(1)), LN2 / 2),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", metavar="KERNEL",
                    help="compare with the arrays of the headers in KERNEL (include/argus/kernel)")
    args = ap.parse_args()
    failed = False
    for name, header, q_of, half_width in FITS:
        fitted = coefficients(q_of, half_width)
        if not args.check:
            print(f"{name} ({header}):")
            print(", ".join(repr(c) for c in fitted))
            continue
        path = os.path.join(args.check, header)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found = re.search(r"\b" + name + r"\[\]\s*=\s*\{([^}]*)\}", text)
        if found is None:
            print(f"exp2_double_fit: no {name} array in {path}")
            failed = True
            continue
        held = [float(x) for x in found.group(1).replace("\n", " ").split(",") if x.strip()]
        if held != fitted:
            print(f"exp2_double_fit: {path}'s {name} holds {held},\n  the fit gives {fitted}")
            failed = True
            continue
        print(f"exp2_double_fit: {path} holds the {len(fitted)} coefficients of {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

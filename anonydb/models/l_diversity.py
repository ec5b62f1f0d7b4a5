"""l-diversity, four variants [Machanavajjhala et al. 2006; Li thesis Def 1.2.1; spec 2.2].

* distinct:      at least l distinct sensitive values per group;
* entropy:       -sum_s p(E,s) ln p(E,s) >= ln l (achieved l = exp(min entropy), real-valued);
* recursive:     (c,l): counts sorted descending r_1 >= ... >= r_m, r_1 < c (r_l + ... + r_m);
* probabilistic: max_s p(E,s) <= 1/l (l may be real; achieved l = min n/mx, exact).

Record owners (see :mod:`anonydb.models.base`): c_s = persons of E holding s, n = persons of E,
m = sum_s c_s. Distinct: at least l values held by someone in E. Probabilistic: the belief that
the victim holds s, c_s / n, is at most 1/l (a person with twelve records of s counts once).
Entropy: -sum_s (c_s/m) ln(c_s/m) >= ln l, over the distribution of E's (person, value) facts.
Recursive (c,l): the same inequality over the counts c_s sorted descending. With one record per
person these are the row-level definitions.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..sqlgen import ident
from .base import GroupContext, Model, as_fraction

VARIANTS = ("distinct", "entropy", "recursive", "probabilistic")


class LDiversity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--l', '--l-variant', '--c')
    by_distribution = True
    name = "l-diversity"

    def __init__(self, l: float, variant: str = "distinct", c: float | None = None):
        if variant not in VARIANTS:
            raise InputError(f"l-diversity variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        self.suppression_monotonic = variant == "distinct"  # a union holds >= the distinct values of each part
        if isinstance(l, bool) or not isinstance(l, (int, float, Fraction)) or not l >= 1:
            raise InputError(f"l must be a number >= 1, got {l!r}")
        if variant in ("distinct", "recursive") and int(l) != l:
            raise InputError(f"{variant} l-diversity needs an integer l, got {l!r}")
        if variant == "recursive":
            if c is None:
                raise InputError("recursive (c,l)-diversity needs the constant c (e.g. --c 3)")
            if isinstance(c, bool) or not isinstance(c, (int, float, Fraction)) or not c > 0:
                raise InputError(f"c must be a number > 0, got {c!r}")
        elif c is not None:
            raise InputError(f"c applies to recursive (c,l)-diversity only, not to the {variant} variant")
        self.l, self.variant, self.c = (int(l) if int(l) == l else l), variant, c
        self.name = f"l-diversity ({variant})" if variant != "recursive" else "l-diversity (recursive (c,l))"
        self.materialize = variant == "recursive"
        self.measure = "facts" if variant in ("entropy", "recursive") else "persons"
        if variant == "distinct":
            self.reads = frozenset({"n", "d"})

    @property
    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"l": self.l, "variant": self.variant}
        if self.c is not None:
            p["c"] = self.c
        return p

    def verdicts(self, ctx: GroupContext):
        lf = as_fraction(self.l, "l")
        cf = as_fraction(self.c, "c") if self.c is not None else Fraction(1)
        return ctx.engine.render(
            "model_l_diversity.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
            variant=self.variant, l=self.l, l_num=lf.numerator, l_den=lf.denominator,
            c_num=cf.numerator, c_den=cf.denominator,
        )

    def achieved(self, worst_value, ctx):
        if self.variant == "entropy":
            return {"l": float(worst_value)}
        if self.variant == "probabilistic":
            return {"l": worst_value}  # exact Fraction n/mx
        return {"l": int(worst_value)}

    def feasibility_note(self, ctx):
        if self.variant in ("distinct", "recursive") and self.l > ctx.domain:
            return (f"l = {self.l} exceeds the {ctx.domain} distinct values of {ctx.sensitive!r} in the table: "
                    f"no grouping can be {self.variant} {self.l}-diverse")
        if self.variant == "entropy":
            h = ctx.engine.scalar(f"SELECT ln(sum(_adb_cnt)) - sum(_adb_cnt * ln(_adb_cnt)) / sum(_adb_cnt) FROM {ident(ctx.glob)}")
            if h is not None and h < math.log(self.l) - 1e-9:
                return (f"the whole table's entropy of {ctx.sensitive!r} is ln {math.exp(h):.4f}, below ln {self.l}: "
                        f"no grouping can be entropy {self.l}-diverse")
        if self.variant == "probabilistic":
            mx = ctx.engine.scalar(f"SELECT max(_adb_cnt) FROM {ident(ctx.glob)}")
            if mx is not None and Fraction(mx) * as_fraction(self.l, "l") > ctx.total:
                return (f"the most frequent value of {ctx.sensitive!r} covers {mx} of {ctx.total} "
                        f"{'persons' if ctx.persons else 'rows'}, more than 1/{self.l}: "
                        f"no grouping can be probabilistic {self.l}-diverse")
        return ""

"""``anonydb anonymize``: the method --method names, run with its own options (:mod:`anonydb.workflow.cli`
parses and dispatches here)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError
from . import ledgercmd
from .cliargs import extra_params as _extra, int_if_whole as _int_if_whole
from .cliutil import _engine_for, _export, _itemset_support


def _dispatch(args: argparse.Namespace, engine: Any, hierarchies: dict, kinds: dict, progress: Any) -> int:
    """Run the method --method names (inside the ledger's tracking, when the release is tracked)."""
    import json

    from ..methods import anonymize

    if args.method == "slicing":
        return _slicing(args, engine, hierarchies, progress)
    if args.method == "anatomy":
        return _anatomy(args, engine)
    if args.method == "injector":
        return _injector(args, engine, hierarchies)
    if args.method == "fulldomain":
        return _fulldomain(args, engine, hierarchies, progress)
    if args.groups:
        raise InputError("--groups belongs to --method anatomy")
    try:
        result = anonymize(
            args.source, args.qi, args.sensitive, out=args.out, engine=engine, hierarchies=hierarchies, kinds=kinds,
            identifiers=args.identifiers, keep=args.keep, relaxed=args.relaxed, categorical=args.categorical, replace=args.replace,
            seed=args.seed, progress=progress, as_view=args.view, plan=args.plan, k=args.k, l=_int_if_whole(args.l), l_variant=args.l_variant, c=args.c,
            t=args.t, distance=args.distance, n=args.n, alpha=args.alpha, delta=args.delta, reference=args.reference,
            bt=[_bt_arg(x, args.qi) for x in args.bt] or None, bt_distance=args.bt_distance, person=args.person,
            pseudonymize=args.pseudonymize, secret_file=args.secret_file, varying=args.varying_qis,
            max_suppression=args.max_suppression, **_extra(args))
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": result.table, "rows": result.rows, "classes": result.classes,
                          "rounds": result.rounds, "seconds": result.seconds, "utility": result.utility,
                          "verification": result.report.to_dict()}, indent=2, default=str))
    else:
        print(result.format())
    return 0


def _fulldomain(args: argparse.Namespace, engine, hierarchies, progress=None) -> int:
    import json

    from ..methods import fulldomain
    from ..schema import split_list

    try:
        r = fulldomain(args.source, args.qi, args.sensitive, hierarchies=hierarchies, out=args.out, engine=engine,
                       max_suppression=args.max_suppression, metric=args.metric, identifiers=args.identifiers,
                       person=args.person, pseudonymize=args.pseudonymize, secret_file=args.secret_file,
                       keep=args.keep,
                       replace=args.replace, seed=args.seed, k=args.k, l=_int_if_whole(args.l),
                       l_variant=args.l_variant, c=args.c, t=args.t, distance=args.distance, alpha=args.alpha,
                       delta=args.delta, reference=args.reference, progress=progress, **_extra(args))
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        qi = split_list(args.qi, "--qi")
        print(json.dumps({"levels": [r.levels[q] for q in qi], "qi": qi, "metric": args.metric, "value": r.metric,
                          "metrics": r.metrics, "suppressed": r.suppressed, "rows": r.rows, "classes": r.classes,
                          "minimal": r.minimal, "checked": r.checked, "lattice": r.lattice, "seconds": r.seconds,
                          "search_seconds": r.search_seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _marginals(engine, s, args) -> dict[str, str]:
    """Per QI a (value, count) relation: from --marginals (attribute, value, count) or --public."""
    from ..presence import population_marginals
    from ..schema import split_list
    from ..sources import open_source
    from ..sqlgen import ident, literal

    qi = split_list(args.qi, "--qi")
    if args.public is not None:
        return population_marginals(engine, open_source(engine, args.public, scratch=s), qi,
                                    prefix=s.name())
    rel = open_source(engine, args.marginals, scratch=s)
    cols = [c for c, _ in engine.columns(rel)]
    if len(cols) != 3:
        raise InputError(f"--marginals {args.marginals}: expected 3 columns (attribute, value, count), got "
                         f"{', '.join(cols)}")
    a, v, n = (ident(c) for c in cols)
    out = {}
    for q in qi:
        out[q] = s.table(f"SELECT CAST({v} AS VARCHAR) AS value, CAST({n} AS BIGINT) AS {ident('count')} "
                         f"FROM {ident(rel)} WHERE CAST({a} AS VARCHAR) = {literal(q)}")
    return out


def _presence(args: argparse.Namespace, hierarchies) -> int:
    import json

    from ..methods.presence import presence_anonymize

    k_map_alone = getattr(args, "k_map", None) is not None and args.delta is None
    if args.identifiers or (args.keep and not k_map_alone):
        raise InputError("delta-presence releases only the generalized QIs: drop --keep and --identifiers (the "
                         "private table's other columns are never published; k-map alone keeps --keep's)")
    if args.confidence is not None:
        return _sfalm(args, hierarchies)

    if args.method not in ("fulldomain", "mondrian"):
        raise InputError("delta-presence and k-map (--public) anonymize with --method fulldomain (SPALM) or mondrian "
                         "(MPALM)")
    from ..schema import split_list

    # k-map alone publishes the research attributes: the sensitive one and --keep's
    keep = ([args.sensitive] if args.sensitive and k_map_alone else []) + split_list(args.keep, "--keep")
    engine = _engine_for(args)
    try:
        r = presence_anonymize(args.source, args.public, args.qi, delta=args.delta, k_map=args.k_map, out=args.out,
                               engine=engine, method=args.method, hierarchies=hierarchies, key=args.key,
                               metric=args.metric, relaxed=args.relaxed, categorical=args.categorical, seed=args.seed,
                               replace=args.replace, keep=keep or None)
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": r.table, "method": r.method, "rows": r.rows, "public_rows": r.public_rows,
                          "classes": r.classes, "levels": r.levels, "k_map": r.k_map, "seconds": r.seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _sfalm(args: argparse.Namespace, hierarchies) -> int:
    import json

    from ..methods.presence import confident_presence

    if args.method != "fulldomain":
        raise InputError("c-confident delta-presence (--confidence) anonymizes with --method fulldomain (SFALM)")
    if args.metric not in ("dm", "loss"):
        raise InputError("c-confident delta-presence ranks nodes by --metric loss (LM, the TR's) or dm")
    engine = _engine_for(args)
    try:
        with engine.scratch("cli") as s:
            r = confident_presence(args.source, args.qi, delta=args.delta, c=args.confidence,
                                   marginals=_marginals(engine, s, args), hierarchies=hierarchies, out=args.out,
                                   engine=engine, metric="lm" if args.metric == "loss" else "dm",
                                   replace=args.replace, seed=args.seed)
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": r.table, "levels": r.levels, "lm": r.lm, "dm": r.dm, "rows": r.rows,
                          "classes": r.classes, "evaluated": r.evaluated, "lattice": r.lattice, "seconds": r.seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _slicing(args: argparse.Namespace, engine, hierarchies, progress=None) -> int:
    import json

    from ..methods import slicing
    from ..schema import split_list

    _l_only(args, "slicing", "--l (l-diverse slicing: p(t,s) <= 1/l)")
    cols: object = 2
    if args.columns is not None:
        spec = args.columns.strip()
        if spec.isdigit():
            cols = int(spec)
        else:
            cols = [split_list(part, f"column {i + 1} of --columns") for i, part in enumerate(spec.split("|"))]
    try:
        r = slicing(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                    columns=cols, alpha=args.sensitive_column_size, bins=args.bins, tries=args.tries,
                    column_k=args.column_k, hierarchies=hierarchies, seed=args.seed, replace=args.replace,
                    membership=args.membership, progress=progress)
        m = r.membership
        if args.export:
            _export(engine, r.view, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"view": r.view, "tables": r.tables, "columns": r.columns, "rows": r.rows,
                          "buckets": r.buckets, "rounds": r.rounds, "seconds": r.seconds, "sizes": r.sizes,
                          "moved": r.moved, "worst": r.verdict.worst, "holds": r.verdict.holds,
                          "membership": m.to_dict() if m else None}, indent=2, default=str))
    else:
        print(r.format())
        if m:
            print(m.format())
    return 0


def _export_pair(engine, result, export: str) -> None:
    """A QIT/ST release to files: PATH.csv -> PATH_qit.csv and PATH_st.csv."""
    from pathlib import Path

    path = Path(export)
    for table, part in ((result.qit, "qit"), (result.st, "st")):
        _export(engine, table, str(path.with_name(f"{path.stem}_{part}{path.suffix}")))


def _bt_arg(text: str, qi: str) -> tuple[Any, float]:
    """--bt B:T -> (b, t): B one number or one per QI (comma-separated, in --qi order)."""
    from ..schema import split_list

    b, sep, t = text.rpartition(":")
    try:
        tv = float(t)
        bs = [float(x) for x in b.split(",")] if sep else []
    except ValueError:
        bs = []
    if not sep or not bs:
        raise InputError(f"--bt expects B:T (e.g. 0.3:0.2, or one bandwidth per QI: 0.3,0.5,...:0.2), got {text!r}")
    if len(bs) == 1:
        return bs[0], tv
    qis = split_list(qi, "--qi")
    if len(bs) != len(qis):
        raise InputError(f"--bt {text!r}: {len(bs)} bandwidths for {len(qis)} quasi-identifiers")
    return dict(zip(qis, bs)), tv


def _l_only(args: argparse.Namespace, method: str, takes: str) -> None:
    """Methods whose only privacy model is distinct l: reject the other model options, require --l."""
    others = [f"--{n.replace('_', '-')}" for n in ("k", "t", "n", "alpha", "delta", "c", "groups", "identifiers")
              if getattr(args, n)]
    if args.l_variant != "distinct":
        others.append("--l-variant")
    if others:
        raise InputError(f"--method {method} takes {takes}; not {', '.join(others)}")
    if args.l is None:
        raise InputError(f"--method {method} needs --l")


def _injector(args: argparse.Namespace, engine, hierarchies) -> int:
    import json

    from ..methods import injector

    _l_only(args, "injector", "--l, --min-exp and --hierarchy")
    if not args.sensitive:
        raise InputError("--method injector needs --sensitive")
    try:
        result = injector(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                          min_exp=0.9 if args.min_exp is None else args.min_exp, hierarchies=hierarchies or None,
                          seed=args.seed, replace=args.replace, itemset_support=_itemset_support(args.itemset_support))
        if args.export:
            _export_pair(engine, result, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"qit": result.qit, "st": result.st, "rows": result.rows, "groups": result.groups,
                          "rules": result.rules, "rules_total": result.rules_total,
                          "profile": {str(k): v for k, v in result.profile.items()}, "leftovers": result.leftovers,
                          "merges": result.merges, "min_valid": result.min_valid, "seconds": result.seconds,
                          "mine_seconds": result.mine_seconds, "verification": result.report.to_dict()},
                         indent=2, default=str))
    else:
        print(result.format())
    return 0


def _minvariant(args: argparse.Namespace, engine, track: Any) -> int:
    return ledgercmd.next_release(args, engine, track, _int_if_whole)


def _anatomy(args: argparse.Namespace, engine) -> int:
    import json

    from ..methods import anatomy

    others = [f"--{n.replace('_', '-')}" for n in ("k", "t", "n", "alpha", "delta", "hierarchy")
              if getattr(args, n)]
    if others:
        raise InputError(f"--method anatomy takes --l (with --l-variant, --c), --groups, --keep and --identifiers; "
                         f"not {', '.join(others)}")
    if args.l is None:
        raise InputError("--method anatomy needs --l")
    try:
        result = anatomy(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                         groups=args.groups, l_variant=args.l_variant, c=args.c, seed=args.seed,
                         replace=args.replace, as_view=args.view, keep=args.keep, identifiers=args.identifiers,
                         person=args.person, pseudonymize=args.pseudonymize, secret_file=args.secret_file)
        mem = None
        if args.membership:
            from ..attacks.membership import anatomy_membership
            from ..schema import split_list
            from ..sources import open_source

            with engine.scratch("cli") as s:
                rel = open_source(engine, args.source, scratch=s)
                mem = anatomy_membership(engine, rel, result.qit, result.st, split_list(args.qi, "--qi"),
                                         args.sensitive, seed=args.seed)
        if args.export:
            _export_pair(engine, result, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"qit": result.qit, "st": result.st, "rows": result.rows, "groups": result.groups,
                          "seconds": result.seconds, "verification": result.report.to_dict(),
                          "membership": mem.to_dict() if mem else None}, indent=2, default=str))
    else:
        print(result.format())
        if mem:
            print(mem.format())
    return 0

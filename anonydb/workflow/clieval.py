"""``anonydb audit``, ``evaluate`` and ``tradeoff``: attack a release, measure it, sweep settings
(:mod:`anonydb.workflow.cli` dispatches here)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InputError
from .cliargs import int_if_whole as _int_if_whole
from .cliutil import _engine_for, _itemset_support
from .climethods import _bt_arg


def _evaluate(args: argparse.Namespace) -> int:
    import json

    from .evaluate import evaluate
    from ..hierarchy import parse_hierarchy_arg
    from ..schema import split_list

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    fg = None
    if args.foreground:
        fg = {"r": _int_if_whole(args.r), "epsilon": args.epsilon, "sigma": args.sigma, "truth": args.truth,
              "targets": split_list(args.targets, "--targets") or None, "max_attrs": args.max_attrs,
              "out": args.risk_out, "replace": bool(args.risk_out)}
    elif args.targets or args.truth or args.risk_out or args.max_attrs:
        raise InputError("--targets, --truth, --max-attrs and --risk-out belong to --foreground")
    engine = _engine_for(args, existing=not args.risk_out)
    try:
        ev = evaluate(args.release, args.qi, args.sensitive, engine=engine, source=args.source, group=args.group,
                      hierarchies=hierarchies, similarity_level=args.similarity_level,
                      similarity_width=args.similarity_width, population=args.population, threshold=args.threshold,
                      min_sup=args.min_sup, foreground=fg)
    finally:
        engine.close()
    print(json.dumps(ev.to_dict(), indent=2, default=str) if args.json else ev.format())
    return 0


def _setting_arg(text: str) -> list[tuple[str, dict[str, Any]]]:
    """METHOD:PARAM=V,... -> settings; PARAM=V1|V2 expands into one setting per value."""
    import itertools

    method, sep, rest = text.partition(":")
    if not sep or not method:
        raise InputError(f"--setting expects METHOD:PARAM=V,... (e.g. mondrian:k=10), got {text!r}")
    grid: list[tuple[str, list[Any]]] = []
    for item in filter(None, rest.split(",")):
        key, eq, vals = item.partition("=")
        if not eq:
            raise InputError(f"--setting {text!r}: {item!r} is not PARAM=VALUE")
        parsed = []
        for v in vals.split("|"):
            try:
                parsed.append(int(v))
            except ValueError:
                try:
                    parsed.append(float(v))
                except ValueError:
                    parsed.append(v)
        grid.append((key.strip().replace("-", "_"), parsed))
    return [(method, dict(zip([k for k, _ in grid], combo))) for combo in itertools.product(*[v for _, v in grid])]


def _tradeoff(args: argparse.Namespace) -> int:
    import json

    from ..hierarchy import parse_hierarchy_arg
    from .tradeoff import sweep, write_frontier_html

    if not args.setting:
        raise InputError("give at least one --setting (e.g. --setting mondrian:k=10|50|100 --setting anatomy:l=4)")
    settings = [x for t in args.setting for x in _setting_arg(t)]
    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    engine = _engine_for(args, existing=True)
    try:
        sw = sweep(args.source, args.qi, args.sensitive, settings, engine=engine, hierarchies=hierarchies,
                   min_sup=args.min_sup)
    finally:
        engine.close()
    if args.html:
        write_frontier_html(sw, args.html)
    print(json.dumps(sw.to_dict(), indent=2, default=str) if args.json else sw.format())
    return 0


def _audit(args: argparse.Namespace) -> int:
    """anonydb audit: the background-knowledge attacks of the thesis on an existing release."""
    import json

    from ..attacks.audit import audit_distribution, audit_rules
    from ..hierarchy import parse_hierarchy_arg
    from ..attacks.knowledge import mine_rules
    from ..schema import split_list
    from ..sources import open_source
    from ..sqlgen import ident

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    rules_mode = args.l is not None
    dist_mode = args.b is not None or args.t is not None
    if rules_mode == dist_mode:
        raise InputError("give --l (rule-based audit: tuples with fewer than l possible values under the mined rules) "
                         "or --b and --t (distribution-based: tuples whose posterior moves more than t)")
    if dist_mode and (args.b is None or args.t is None):
        raise InputError("the distribution-based audit needs both --b (the adversary's bandwidth) and --t")
    rule_opts = [o for o, v in (("--min-exp", args.min_exp), ("--itemset-support", args.itemset_support))
                 if v is not None]
    if dist_mode and rule_opts:
        raise InputError(f"{' and '.join(rule_opts)}: options of the rule-based audit's mined rules (--l); the "
                         f"distribution-based audit mines none")
    min_exp = 0.9 if args.min_exp is None else args.min_exp  # anonymize --method injector's default
    support = _itemset_support(args.itemset_support)  # and its parsing: min, max or a count
    qi = split_list(args.qi, "--qi")
    engine = _engine_for(args, existing=True)
    if engine.dialect == "duckdb":  # the rule-respecting pairing runs seconds on Adult: no bar on stdout (--json)
        engine.execute("SET enable_progress_bar = false")
    out: dict[str, Any] = {}
    try:
        with engine.scratch("cli_audit") as s:
            src = open_source(engine, args.source, scratch=s)
            qit, st = f"{args.release}_qit", f"{args.release}_st"
            table = None
            if engine.exists(qit) and engine.exists(st):
                group = args.group or "group_id"
            else:
                rel = open_source(engine, args.release, scratch=s)
                cols = dict(engine.columns(rel))
                group = args.group or ("bucket_id" if "bucket_id" in cols and "eq_class" not in cols else "eq_class")
                if group not in cols:
                    raise InputError(f"{args.release!r} has no column {group!r} naming each record's group (--group); "
                                     f"neither are there tables {qit!r} and {st!r}")
                if all(c in cols for c in qi + [args.sensitive]) and not args.key:
                    # exact QIs but no trusted pairing with the values (a sliced or bucketized table): the
                    # groups' QI tuples and value counts, as a QIT/ST pair
                    g = ident(group)
                    qit = s.table(f"SELECT {g}, {', '.join(ident(c) for c in qi)} FROM {ident(rel)}")
                    st = s.table(f"SELECT {g}, {ident(args.sensitive)}, count(*) AS {ident('count')} "
                                 f"FROM {ident(rel)} GROUP BY ALL")
                else:
                    if not args.key:
                        raise InputError("the release generalizes the QIs: give --key, a column kept in the release "
                                         "that identifies the source row, to join back the exact QIs")
                    for name, have in ((args.release, cols), (args.source, dict(engine.columns(src)))):
                        if args.key not in have:
                            raise InputError(f"--key {args.key!r} is not a column of {name!r}")
                    table = s.table(f"SELECT r.{ident(group)}, x.* FROM {ident(rel)} AS r JOIN {ident(src)} AS x "
                                    f"ON r.{ident(args.key)} = x.{ident(args.key)}")
            where = dict(table=table) if table is not None else dict(qit=qit, st=st)
            if rules_mode:
                kb = mine_rules(src, qi, args.sensitive, min_exp=min_exp, hierarchies=hierarchies or None,
                                engine=engine, scratch=s, itemset_support=support)
                res = audit_rules(kb, _int_if_whole(args.l), engine=engine, group=group, sensitive=args.sensitive,
                                  mode=args.mode, **where)
                out = {"kind": "rules", "min_exp": min_exp, "itemset_support": support, "knowledge": kb.settings(),
                       "rules": kb.minimal, "l": res.l, "mode": res.mode,
                       "rows": res.rows, "groups": res.groups, "vulnerable": res.vulnerable,
                       "vulnerable_groups": res.vulnerable_groups, "min_possible": res.min_possible,
                       "by_count": res.by_count}
                text = f"{kb.minimal} minimal rules mined at {kb.describe_settings()}\n" + res.format()
            else:
                res = audit_distribution(_bt_arg(f"{args.b}:{args.t}", args.qi)[0], args.t, engine=engine, qi=qi,
                                         sensitive=args.sensitive, group=group, prior_source=src,
                                         distance=args.distance, hierarchies=hierarchies or None, **where)
                out = {"kind": "distribution", "b": res.b, "t": res.t, "distance": res.distance, "rows": res.rows,
                       "groups": res.groups, "vulnerable": res.vulnerable, "vulnerable_groups": res.vulnerable_groups,
                       "worst": res.worst}
                text = res.format()
    finally:
        engine.close()
    print(json.dumps(out, indent=2, default=str) if args.json else text)
    return 0

"""The command line's arguments: the parser of every subcommand, its options' help and each
command's worked example (``anonydb COMMAND --help``); the commands themselves are in
:mod:`anonydb.workflow.cli`."""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from ..methods.mondrian import PLANS
from ..models import DISCLOSURE_VARIANTS, DISTANCES, L_VARIANTS
from . import ledgercmd

#: what --db takes, in every command
DB_HELP = "a DuckDB database file (default: in memory) or a postgresql://user@host:port/db URL"
#: what --engine takes, in every command that takes --db
ENGINE_HELP = ("duckdb (default; --db picks the file or PostgreSQL server), or Spark: spark (a local session on "
               "every core), local[N], spark://host:port (a cluster) or sc://host:port (Spark Connect); tables "
               "then live in the session's catalog")


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("privacy models")
    g.add_argument("--k", type=int, help="k-anonymity: every group has at least k records")
    g.add_argument("--l", type=float, help="l-diversity (variant by --l-variant)")
    g.add_argument("--l-variant", choices=L_VARIANTS + DISCLOSURE_VARIANTS, default="distinct",
                   help="l-diversity variant (default distinct; pd-/npd-recursive: with --c and --allowed)")
    g.add_argument("--c", type=float, help="the constant c of recursive (c,l)-diversity")
    g.add_argument("--t", type=float, help="t-closeness: EMD to the table's distribution at most t")
    g.add_argument("--distance", choices=DISTANCES,
                   help="EMD ground distance (default: hierarchical with a hierarchy for the sensitive "
                        "attribute, ordered for a numeric one, equal otherwise)")
    g.add_argument("--reference", choices=("table", "uniform"), default="table",
                   help="t-closeness reference distribution: the table's (default) or uniform over its "
                        "distinct values (paper-compatible weighting only)")
    g.add_argument("--n", type=int, help="with --t: (n,t)-closeness against natural supersets of >= n records")
    g.add_argument("--supersets", choices=("subsets", "rollup"), default="subsets",
                   help="natural supersets for (n,t)-closeness: every QI subset, or QI prefixes")
    g.add_argument("--alpha", type=float, help="with --k: (alpha,k)-anonymity, no value above alpha in a group")
    g.add_argument("--beta", type=float, help="beta-likeness: no sensitive value's share grows in a group by more "
                                              "than beta relative to the table's ((q - p) / p <= beta)")
    g.add_argument("--beta-variant", choices=("basic", "enhanced"), default="basic",
                   help="beta-likeness variant: basic (default) or enhanced (gain also within -ln p)")
    g.add_argument("--allowed", metavar="VALUES",
                   help="pd-/npd-recursive l-diversity: the sensitive values whose positive disclosure is allowed "
                        "(comma-separated)")
    g.add_argument("--protected", metavar="VALUES",
                   help="npd-recursive l-diversity: the values whose negative disclosure is not allowed")
    g.add_argument("--c2", type=float, metavar="SHARE",
                   help="npd-recursive l-diversity: every protected value in at least this share of a group")
    g.add_argument("--conf-bound", metavar="VALUE=H,...",
                   help="confidence bounding: conf(group -> VALUE) <= H per sensitive value ('*=H': every other)")
    g.add_argument("--xy-k", type=int, metavar="K",
                   help="with --conf-bound: (X,Y)-privacy, at least K persons (rows) a group and the bounds")
    g.add_argument("--ke", metavar="K,E",
                   help="(k,e)-anonymity: >= K distinct numeric sensitive values a group, spanning >= E")
    g.add_argument("--epsilon-m", metavar="EPS,M",
                   help="(epsilon,m)-anonymity: at most 1/M of a group within EPS of any of its sensitive values")
    g.add_argument("--multi-k", type=int, metavar="K",
                   help="multiple-QID k-anonymity: k on each QID set of --qid-sets")
    g.add_argument("--guard", metavar="COLUMN",
                   help="personalized privacy: the column of each record's guarding node in the sensitive taxonomy")
    g.add_argument("--breach", type=float, metavar="P",
                   help="personalized privacy: no record's value inferred under its guarding node above P")
    g.add_argument("--qid-sets", metavar="A,B;C",
                   help="multiple-QID k-anonymity: the QID sets, columns by commas, sets by semicolons")
    g.add_argument("--delta", type=_delta_arg, metavar="DELTA|MIN,MAX",
                   help="delta-disclosure: |ln(p(E,s)/p(T,s))| < DELTA; with --public: delta-presence, every "
                        "public individual's presence probability within [MIN, MAX]")
    g.add_argument("--public", metavar="TABLE|FILE",
                   help="delta-presence: the public table the private one (the source) is drawn from")
    g.add_argument("--key", metavar="COL",
                   help="delta-presence, k-map: a column identifying a person in both tables (default: match rows on "
                        "their QI values); anonymize without --public: track the records by this unique key across "
                        "releases (the release is recorded in the database's ledger, anonydb_releases, as keyed "
                        "fingerprints under --secret-file or $ANONYDB_SECRET, and verified together with the "
                        "earlier releases of its source; the key is not published)")
    g.add_argument("--k-map", type=int, metavar="K",
                   help="k-map, with --public: every released class matches at least K rows of the public table "
                        "(the population) generalized the same way")
    g.add_argument("--confidence", metavar="C",
                   help="c-confident delta-presence: every released class is (MIN,MAX)-present with probability >= C, "
                        "knowing only the population's per-attribute counts (--marginals, or those of --public)")
    g.add_argument("--marginals", metavar="CSV",
                   help="c-confident delta-presence: the population's counts, rows of attribute, value, count")
    g.add_argument("--private", metavar="TABLE|FILE",
                   help="c-confident check of a generalized release: the private table it was made from")



def extra_params(args: argparse.Namespace) -> dict[str, Any]:
    """The parameters of the models beyond k, l, t, n, alpha and delta that were given: beta-likeness
    (--beta-variant alone is an error), pd-/npd-recursive l, confidence bounding, (X,Y)-privacy,
    (k,e), (epsilon,m) and multiple-QID k."""
    from ..errors import InputError

    out: dict[str, Any] = {}
    if getattr(args, "beta", None) is None:
        if getattr(args, "beta_variant", "basic") != "basic":
            raise InputError("--beta-variant applies to beta-likeness: give --beta as well")
    else:
        out.update(beta=int_if_whole(args.beta), beta_variant=args.beta_variant)
    for name in ("allowed", "protected", "conf_bound", "xy_k", "ke", "epsilon_m", "multi_k", "qid_sets", "guard"):
        if getattr(args, name, None) is not None:
            out[name] = getattr(args, name)
    for name in ("c2", "breach"):
        if getattr(args, name, None) is not None:
            out[name] = int_if_whole(getattr(args, name))
    return out


def int_if_whole(x: float | None):
    return int(x) if x is not None and float(x).is_integer() else x


def model_params(args: argparse.Namespace) -> dict[str, Any]:
    """The models' parameters of ``anonydb check`` (the options of the "privacy models" group) as
    :func:`anonydb.check` takes them; the browser workbench reads its fields the same way."""
    return dict(k=args.k, l=int_if_whole(args.l), l_variant=args.l_variant, c=args.c, t=args.t,
                distance=args.distance, n=args.n, alpha=args.alpha, delta=args.delta, supersets=args.supersets,
                reference=args.reference, **extra_params(args))


def _delta_arg(text: str):
    """--delta: one number (delta-disclosure) or 'min,max' (delta-presence, kept as text)."""
    if "," in text:
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'min,max', got {text!r}") from None



class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line and exit 2 (not a usage block)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"anonydb: error: {message} (see {self.prog} --help)\n")


PERSON_HELP = ("the column naming each record's owner (e.g. a patient id): every model counts distinct persons, "
               "not rows; never published as it is")


#: each command's example in its --help (tests/test_help.py parses them): the command, as run from the
#: root of anonydb's repository (Adult in ../shared/datasets/adult), and what it does
ADULT = "../shared/datasets/adult/adult.csv"
EXAMPLES = {
    "check": (f"anonydb check {ADULT} --qi age,sex,race --sensitive occupation --k 5 --l 3",
              "whether Adult is 5-anonymous and 3-diverse; exit 1 lists the failing groups"),
    "anonymize": (f"anonydb anonymize {ADULT} --qi age,sex,race,education --sensitive occupation --k 10 --l 3 "
                  "--out adult_k10 --db adult.duckdb",
                  "a Mondrian release of Adult, verified 10-anonymous and 3-diverse: adult_k10"),
    "release": ("anonydb release release.yaml",
                "run release.yaml (docs/releases.md has one for Adult) and write its release"),
    "releases": ("anonydb releases --db visits.duckdb --series visits_monthly",
                 "the ledger entries of series visits_monthly (the README's monthly job)"),
    "plan": ("anonydb plan release.yaml",
             "the SQL release.yaml runs, each template once with its count; nothing written"),
    "report": (f"anonydb report adult_k10 --db adult.duckdb --qi age,sex,race,education --sensitive occupation "
               f"--k 10 --l 3 --original {ADULT} --html report.html",
               "re-check anonymize's example release; verdicts, risk and loss to report.html"),
    "audit": (f"anonydb audit adult_l5 --db adult.duckdb --source {ADULT} --qi age,sex,race --sensitive occupation "
              "--l 5",
              "attack adult_l5 (anonymize --method anatomy --l 5) with rules mined from Adult"),
    "evaluate": (f"anonydb evaluate adult_k10 --db adult.duckdb --qi age,sex,race,education --sensitive occupation "
                 f"--source {ADULT}",
                 "attacks, risk, P_loss and U_loss of anonymize's example release adult_k10"),
    "tradeoff": (f"anonydb tradeoff {ADULT} --qi age,sex,race,education --sensitive occupation "
                 "--setting 'mondrian:k=10|100' --setting anatomy:l=4",
                 "three releases of Adult, P_loss and U_loss; * marks the efficient frontier"),
    "risk": (f"anonydb risk {ADULT} --qi age,sex,race,marital-status,education --fraction 0.1",
             "Adult's re-identification risk, read as a 10% sample of its population"),
    "dp": ("anonydb dp visits.csv --person person_id --by diagnosis,month --mean cost:0:5000 --epsilon 1 "
           "--delta 1e-6 --max-groups 4 --out visit_stats --db w.duckdb",
           "noisy counts and mean costs per diagnosis and month; a person counts in at most 4 of them"),
    "ui": ("anonydb ui --db adult.duckdb",
           "serve the workbench for adult.duckdb on this machine; open the printed URL (it holds the token)"),
    "sql": ("anonydb sql --out anonydb.sql",
            "write the script; `.read anonydb.sql` in the DuckDB CLI installs its macros"),
    "demo": ("anonydb demo --rows 10000 --k 10",
             "10,000 synthetic persons: check, generalize to k=10, l=3, t=0.3, then Mondrian"),
}


def _about(name: str, summary: str) -> dict[str, Any]:
    """add_parser's keywords for a command: its summary (in `anonydb --help` and atop its own help) and its
    example (EXAMPLES) below its options, continued with a backslash between options to fit 80 columns."""
    import textwrap

    command, what = EXAMPLES[name]
    units: list[str] = []  # an option with its value
    for word in command.split():
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines = [units[0]]
    for u in units[1:]:
        lines[-1:] = [f"{lines[-1]} {u}"] if len(lines[-1]) + len(u) < 72 else [lines[-1], u]
    return dict(help=summary, description=textwrap.fill(summary, 78), epilog="example:\n  "
                + " \\\n      ".join(lines) + f"\n  {what}", formatter_class=argparse.RawDescriptionHelpFormatter)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="anonydb", description="Check tables against privacy models, write verified releases "
                 "(Mondrian, Anatomy, full-domain, slicing, Injector, m-invariant series), measure their risk and "
                 "attack them, and keep a ledger of releases, all in SQL on DuckDB (default), PostgreSQL or Spark. "
                 "Run `anonydb COMMAND --help` for a command's options and an example (its paths are relative to the "
                 "root of anonydb's repository).")
    ap.add_argument("--version", action="version", version=f"anonydb {__version__}")
    ap.add_argument("--debug", action="store_true", help="on an error, also print the traceback")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND",
                            help="one of the commands below")

    c = sub.add_parser("check", **_about("check", "check which privacy models a table or CSV/Parquet file meets, "
                                                  "listing the groups that fail (exit 1 if one fails)"))
    c.add_argument("source", help="a table or view in --db, or a CSV/Parquet file")
    c.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    c.add_argument("--sensitive", help="the sensitive attribute")
    c.add_argument("--db", help=DB_HELP)
    c.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    c.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH",
                   help="an ARX-format hierarchy file for an attribute (repeatable)")
    c.add_argument("--numeric", default=None, help="attributes that must hold numbers, comma-separated")
    c.add_argument("--person", metavar="COL", help=PERSON_HELP)
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--max-groups", type=int, metavar="N",
                   help="violating groups listed per model (default 5 in the text, 20 with --json)")
    _add_model_args(c)

    a = sub.add_parser("anonymize", **_about("anonymize", "write a release that meets the privacy models, verified "
                                             "before it is written: --method mondrian (default), anatomy, fulldomain, "
                                             "slicing, injector or minvariant"))
    a.add_argument("source", help="a table or view in --db, or a CSV/Parquet file")
    a.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    a.add_argument("--sensitive", help="the sensitive attribute")
    a.add_argument("--out", required=True, help="the release table to create (in --db); anatomy writes "
                   "<out>_qit and <out>_st")
    a.add_argument("--method", choices=("mondrian", "anatomy", "fulldomain", "slicing", "injector", "minvariant"),
                   default="mondrian",
                   help="mondrian (generalized release, default), anatomy (QIT/ST pair, needs --l), minvariant (the "
                        "next m-invariant release of a series, with counterfeits; needs --key and --m), fulldomain "
                        "(one hierarchy level per QI, the best by --metric; needs --hierarchy for every QI), "
                        "slicing (column tables <out>_c1.. and the sliced view <out>; needs --l) or injector "
                        "(QIT/ST pair, matching l-diverse against rules mined from the data; needs --l)")
    a.add_argument("--min-exp", type=float, metavar="E",
                   help="injector: the minimum expectation of the mined negative association rules (default 0.9)")
    a.add_argument("--itemset-support", metavar="N",
                   help="injector: the tuples an itemset needs before rules are formed from it: min (default, the "
                        "smallest rule threshold), max (the largest) or a count; from 1000 the rules are the "
                        "thesis's kind")
    a.add_argument("--bt", action="append", default=[], metavar="B:T",
                   help="mondrian: (B,t)-privacy against the kernel-prior adversary of bandwidth B (one number, or "
                        "one per QI comma-separated): every tuple's posterior within t of its prior; repeat for "
                        "skyline (B,t)-privacy")
    a.add_argument("--bt-distance", choices=("equal", "ordered", "hierarchical", "js"),
                   help="mondrian --bt: the distance D between prior and posterior (default as for --t)")
    a.add_argument("--columns", metavar="C|SPEC",
                   help="slicing: the number of columns c (default 2), or the columns themselves as "
                        "'a,b|c,d' (attributes comma-separated, columns separated by |)")
    a.add_argument("--sensitive-column-size", type=int, metavar="ALPHA",
                   help="slicing: put the sensitive attribute with its ALPHA-1 most correlated QIs (special "
                        "attribute partitioning)")
    a.add_argument("--column-k", type=int, metavar="K",
                   help="slicing: generalize each column without the sensitive attribute to K-anonymity first")
    a.add_argument("--tries", type=int, help="slicing: split dimensions tried per bucket (default all; 1 = Fig 4.1)")
    a.add_argument("--bins", type=int, default=10,
                   help="slicing: equal-width intervals of numeric attributes for phi^2 (default 10)")
    a.add_argument("--membership", action="store_true",
                   help="slicing, anatomy: also report membership disclosure (fake tuples, matching buckets)")
    a.add_argument("--max-suppression", type=float, default=0.0,
                   help="fulldomain: the largest fraction of rows (of persons with --person) that may be "
                        "suppressed; mondrian --varying-qis: of persons whose linked records the intersection "
                        "attack singles out (default 0)")
    a.add_argument("--varying-qis", action="store_true",
                   help="mondrian --person: the QIs vary within a person (a visit month): classes of records, each "
                        "counting its persons; with the person pseudonymized, every person's set of classes is "
                        "shared by k persons")
    a.add_argument("--metric", choices=("dm", "aecs", "height", "precision", "loss", "entropy"), default="dm",
                   help="fulldomain: the utility metric that picks the optimum (default dm)")
    a.add_argument("--groups", metavar="COLUMN", help="anatomy: release QIT/ST for the groups of this column "
                   "(e.g. a Mondrian eq_class) instead of creating groups")
    a.add_argument("--db", help=DB_HELP + "; use --export to keep an in-memory release")
    a.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    a.add_argument("--export", metavar="PATH", help="also write the release to a .csv or .parquet file")
    a.add_argument("--identifiers", help="columns naming a person, comma-separated: dropped, and refused if one "
                                         "repeats (several records per person)")
    a.add_argument("--person", metavar="COL", help=PERSON_HELP + "; mondrian, fulldomain and anatomy put all of "
                   "a person's records in one class")
    a.add_argument("--pseudonymize", metavar="COLS",
                   help="columns to publish as keyed pseudonyms (HMAC-SHA256 hex of the value's text), comma-separated; "
                        "the key: --secret-file, else $ANONYDB_SECRET, else a fresh one (no other release links)")
    a.add_argument("--secret-file", metavar="PATH",
                   help="the publisher's secret: keys the pseudonyms and the ledger's fingerprints; the file's bytes (one "
                        "trailing newline dropped), at least 16; never stored")
    a.add_argument("--series", metavar="NAME", help="the ledger's series of this release (default: --out); a release "
                                                    "naming --person or --key into a database is tracked")
    a.add_argument("--untracked", action="store_true",
                   help="write a person-level release composed with no earlier or later release (a mark in the "
                        "ledger; needed after an untracked release of the same output or series)")
    a.add_argument("--ledger-schema", metavar="SCHEMA",
                   help="the schema holding the ledger (default: the database's current one; created if missing)")
    a.add_argument("--composition", choices=("intersection", "insert-only", "m-invariance"),
                   help="how the releases of the source compose: every person keeps l values across them "
                        "(intersection, default), insert-only (Byun et al. 2006: no record leaves) or m-invariance")
    a.add_argument("--m", type=int, metavar="M", help="m-invariance: every group m different values, one signature "
                                                      "per record across its releases (Xiao & Tao 2007)")
    a.add_argument("--form", choices=("generalized", "anatomy"), default="generalized",
                   help="minvariant: one generalized table (default) or a QIT/ST pair")
    a.add_argument("--keep", metavar="COLS",
                   help="columns to publish unchanged, comma-separated (every column that is not a QI, the "
                        "sensitive attribute or kept is dropped); the models are verified over them too")
    a.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH",
                   help="ARX hierarchy CSV for a categorical QI (cut along it) or for the sensitive attribute")
    a.add_argument("--numeric", default=None, help="attributes that must hold numbers, comma-separated")
    a.add_argument("--relaxed", action="store_true", help="relaxed Mondrian: split ties so halves are balanced")
    a.add_argument("--categorical", choices=("hierarchy", "order"), default="hierarchy",
                   help="cut categorical QIs along their hierarchy (default) or in sorted value order")
    a.add_argument("--plan", choices=PLANS, default="auto",
                   help="Mondrian: every round in one recursive statement (recursive), one round at a time "
                        "(levelwise: portable, progress per round), or the top cut without rewriting the rows and "
                        "the fragments finished in parallel (fragments); auto picks by engine and size")
    a.add_argument("--replace", action="store_true",
                   help="replace --out and the --export file if they exist (never the source); the old release stays "
                        "until the new one is verified")
    a.add_argument("--view", action="store_true", help="make --out a view over the verified rows (kept in <out>__data)")
    a.add_argument("--seed", type=int, default=None,
                   help="a reproducible row order that anyone who knows the seed can recompute (default: a fresh "
                        "secret order)")
    a.add_argument("--quiet", action="store_true", help="no progress display")
    a.add_argument("--json", action="store_true", help="print the result (utility, verification) as JSON")
    _add_model_args(a)

    r = sub.add_parser("release", **_about("release", "run a YAML release spec end to end: load, anonymize, verify, "
                                                      "materialize, report"))
    r.add_argument("spec", help="the release spec (YAML)")
    r.add_argument("--db", help=DB_HELP + " (overrides the spec's database:)")
    r.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--quiet", action="store_true", help="no progress display (it is shown only on a terminal)")

    ledgercmd.add_parser(sub, DB_HELP, ENGINE_HELP, _about)

    p = sub.add_parser("plan", **_about("plan", "print the SQL a release spec runs, replayed on a scratch in-memory "
                                                "copy of its source: nothing is written"))
    p.add_argument("spec", help="the release spec (YAML)")
    p.add_argument("--db", help=DB_HELP + " holding the source (read only)")
    p.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    p.add_argument("--all", action="store_true", help="every statement (default: each template once, with its count)")

    rp = sub.add_parser("report", **_about("report", "re-check a release (a spec's, or a table or file) and report it "
                                                     "as JSON or an HTML page: verdicts, class sizes, risk, "
                                                     "information loss"))
    rp.add_argument("source", help="a release spec (.yaml: reports its existing release), or a table/CSV/Parquet file")
    _add_model_args(rp)
    rp.add_argument("--qi", help="quasi-identifiers, comma-separated (a table's report)")
    rp.add_argument("--sensitive", help="the sensitive attribute")
    rp.add_argument("--class-column", help="the column naming a record's class (default: the QI values)")
    rp.add_argument("--person", metavar="COL", help=PERSON_HELP)
    rp.add_argument("--original", metavar="TABLE|FILE", help="the source the release came from (per-QI loss)")
    rp.add_argument("--threshold", type=float, default=0.2, help="risk threshold (default 0.2)")
    rp.add_argument("--suda", action="store_true", help="the risk section adds SUDA2's special uniques (a table's report)")
    rp.add_argument("--db", help=DB_HELP)
    rp.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    rp.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH", help="hierarchy of an attribute")
    rp.add_argument("--html", metavar="PATH", help="write the HTML report here")
    rp.add_argument("--json", action="store_true", help="print the report as JSON")

    au = sub.add_parser("audit", **_about("audit", "attack an existing release with background knowledge mined from "
                                                   "its source: rule-based (--l) or distribution-based (--b, --t)"))
    au.add_argument("release", help="the release: NAME with tables NAME_qit and NAME_st (Anatomy, Injector); a "
                                    "table with a group column (--group) and the exact QIs (a sliced release whose "
                                    "QIs share one column, a bucketized table); or a generalized table with --key")
    au.add_argument("--source", required=True, help="the table or file the release was made from (the adversary's "
                                                    "knowledge is mined from it)")
    au.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    au.add_argument("--sensitive", required=True, help="the sensitive attribute")
    au.add_argument("--group", help="the release's group column (default group_id for QIT/ST, bucket_id for a sliced "
                                    "release, eq_class otherwise)")
    au.add_argument("--key", help="a generalized release: the column identifying the source row (kept in both)")
    au.add_argument("--l", type=float, help="rule-based: vulnerable = fewer than l possible sensitive values")
    au.add_argument("--min-exp", type=float, metavar="E",
                    help="rule-based: the minimum expectation of the mined rules (default 0.9), as anonymize's")
    au.add_argument("--itemset-support", metavar="N",
                    help="rule-based: the tuples an itemset needs before rules are formed from it, as anonymize "
                         "--method injector's: min (default), max or a count; give what the release's report names")
    au.add_argument("--mode", choices=("matching", "simple"), default="matching",
                    help="rule-based: count valid values by matching (default) or by group values minus the IVS")
    au.add_argument("--b", metavar="B", help="distribution-based: the adversary's bandwidth (one number or one per QI)")
    au.add_argument("--t", type=float, help="distribution-based: vulnerable = D[prior, posterior] > t")
    au.add_argument("--distance", choices=("equal", "ordered", "hierarchical", "js"),
                    help="distribution-based: D (default as for t-closeness)")
    au.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH", help="hierarchy of an attribute")
    au.add_argument("--db", help=DB_HELP)
    au.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    au.add_argument("--json", action="store_true", help="print the result as JSON")

    ev = sub.add_parser("evaluate", **_about("evaluate", "measure what a release leaks and keeps: homogeneity and "
                                                         "similarity attacks, re-identification risk, P_loss, U_loss "
                                                         "(with --source), the foreground-knowledge attack "
                                                         "(--foreground)"))
    ev.add_argument("release", help="NAME with tables NAME_qit and NAME_st, or a table/file with one row per record "
                                    "and a group column")
    ev.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    ev.add_argument("--sensitive", required=True, help="the sensitive attribute")
    ev.add_argument("--group", help="the group column (default group_id, eq_class or bucket_id, whichever exists)")
    ev.add_argument("--source", help="the original table or file: enables U_loss")
    ev.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH",
                    help="hierarchies: of the QIs (U_loss populations) and of the sensitive attribute (similarity)")
    ev.add_argument("--similarity-level", type=int, default=1, help="similarity: the hierarchy level (default 1)")
    ev.add_argument("--similarity-width", type=float, help="similarity of a numeric attribute: the range width")
    ev.add_argument("--population", help="a population table in the release's coding: journalist risk")
    ev.add_argument("--threshold", type=float, default=0.2, help="record risk threshold (default 0.2)")
    ev.add_argument("--min-sup", type=float, default=0.05, help="U_loss: minimum support of a population (0.05)")
    ev.add_argument("--foreground", action="store_true", help="also run the foreground-knowledge attack")
    ev.add_argument("--targets", help="foreground: sensitive values forming the event x, comma-separated "
                                      "(default: every value on its own)")
    ev.add_argument("--r", type=float, default=2, help="foreground: breach when p(t:x) > 1/r (default 2)")
    ev.add_argument("--epsilon", type=float, default=0.01, help="foreground: sampling error (default 0.01)")
    ev.add_argument("--sigma", type=float, default=0.9, help="foreground: sampling confidence (default 0.9)")
    ev.add_argument("--truth", help="foreground: the publisher's table of group, QIs and true sensitive value")
    ev.add_argument("--max-attrs", type=int, help="foreground: attribute sets of at most this many QIs")
    ev.add_argument("--risk-out", metavar="TABLE", help="foreground: write every tuple's risk to this table (in --db)")
    ev.add_argument("--db", help=DB_HELP)
    ev.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    ev.add_argument("--json", action="store_true", help="print the evaluation as JSON")

    tr = sub.add_parser("tradeoff", **_about("tradeoff", "anonymize once per --setting and compare P_loss with "
                                                         "U_loss: the efficient frontier, as a table or an HTML plot "
                                                         "(--html)"))
    tr.add_argument("source", help="a table or view in --db, or a CSV/Parquet file")
    tr.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    tr.add_argument("--sensitive", required=True, help="the sensitive attribute")
    tr.add_argument("--setting", action="append", default=[], metavar="METHOD:PARAM=V,...",
                    help="one release, e.g. mondrian:k=10 or mondrian:k=5,t=0.2 or anatomy:l=4 (repeatable); "
                         "PARAM=V1|V2|... sweeps a parameter")
    tr.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH", help="hierarchy of an attribute")
    tr.add_argument("--min-sup", type=float, default=0.05, help="U_loss: minimum support of a population (0.05)")
    tr.add_argument("--html", metavar="PATH", help="write the frontier plot and table as HTML")
    tr.add_argument("--db", help=DB_HELP)
    tr.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    tr.add_argument("--json", action="store_true", help="print the points as JSON")

    from . import riskcmd

    riskcmd.add_parser(sub, DB_HELP, ENGINE_HELP, PERSON_HELP, _about)
    from . import dpcmd

    dpcmd.add_parser(sub, DB_HELP, ENGINE_HELP, _about)
    u = sub.add_parser("ui", **_about("ui", "a workbench in the browser: open a table, set roles, check, explore risk "
                                            "against utility, release (pip install 'anonydb[ui]')"))
    u.add_argument("--db", help=DB_HELP)
    u.add_argument("--engine", metavar="ENGINE", help=ENGINE_HELP)
    u.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
    u.add_argument("--port", type=int, default=0, help="the port (default: a free one)")

    q = sub.add_parser("sql", **_about("sql", "write anonydb as one SQL script of DuckDB table macros (the checks, "
                                              "generalization, Mondrian, Anatomy, risk), for `.read` in the DuckDB "
                                              "CLI or any client, with no Python"))
    q.add_argument("--out", metavar="PATH", help="write the script here (default: print it)")
    q.add_argument("--replace", action="store_true", help="replace PATH if it exists")

    d = sub.add_parser("demo", **_about("demo", "the whole job on a synthetic census table in memory: check it, "
                                                "generalize it until k, l and t hold, then a Mondrian release"))
    d.add_argument("--rows", type=int, default=100_000, help="rows of the synthetic table (default 100000)")
    d.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    d.add_argument("--k", type=int, default=5, help="k-anonymity the releases must meet (default 5)")
    d.add_argument("--l", type=float, default=3, help="distinct l-diversity of occupation the releases must meet "
                                                      "(default 3)")
    d.add_argument("--t", type=float, default=0.3, help="t-closeness of occupation the releases must meet "
                                                        "(default 0.3)")
    return ap

"""The workbench's page (NiceGUI: Vue and Quasar in the browser, ECharts for the charts, every asset
shipped in its wheel): five tabs in the order a release is signed off, Data, Roles, Check & risk,
Explore, Release. Every action calls :class:`anonydb.workflow.ui.workbench.Workbench`; long ones run in a
thread (``run.io_bound``) while a timer shows their phase, so the page stays responsive, and can be
cancelled. Every error is a message in the page; the server keeps running."""

from __future__ import annotations

from typing import Any

from .workbench import ROLES, Workbench, model_fields, model_params, spec_privacy

METHODS = ("mondrian", "fulldomain", "anatomy")
#: SUDA2 is checked by default up to this many rows (it searches every QI subset of every record)
SUDA_ROWS = 200_000


def bars(labels: list[str], values: list[float], title: str, color: str = "#4a7fb5") -> dict[str, Any]:
    """ECharts options of a bar chart."""
    return {"title": {"text": title, "textStyle": {"fontSize": 13}}, "tooltip": {},
            "grid": {"left": 60, "right": 20, "bottom": 80},
            "xAxis": {"type": "category", "data": labels, "axisLabel": {"rotate": 40}},
            "yAxis": {"type": "value"}, "series": [{"type": "bar", "data": values, "itemStyle": {"color": color}}]}


def build(wb: Workbench) -> None:
    """The page of one browser tab (its own choices; the workbench and its engine are shared)."""
    from nicegui import run, ui

    st: dict[str, Any] = {"source": None, "columns": [], "roles": {}, "hier": {}, "method": "mondrian",
                          "table": "release", "replace": False, "fields": {}, "point": None}

    def fail(e: BaseException | str) -> None:
        """A message in the page, in red: the text, or an error's one line."""
        from ..exits import one_line

        text = e if isinstance(e, str) else one_line(e)
        message.set_text(text)
        message.classes(replace="text-negative")
        ui.notify(text, type="negative")

    def say(text: str) -> None:
        message.set_text(text)
        message.classes(replace="text-positive")

    async def job(name: str, work: Any) -> Any:
        try:
            j = await run.io_bound(wb.run, name, work)
        except Exception as e:  # noqa: BLE001 - refused (another step runs): a message
            fail(e)
            return None
        if j is None:  # the server is stopping
            return None
        if j.error:
            fail(j.error)
            return None
        return j.result

    # -- header: the job that runs ---------------------------------------------------------------
    with ui.header().classes("items-center bg-blue-grey-9"):
        shown = wb.label if "://" in wb.label or wb.label.startswith("spark") else wb.label.rsplit("/", 1)[-1]
        ui.label(f"anonydb workbench - {shown or 'in-memory DuckDB'}").classes("text-h6")
        ui.space()
        phase = ui.label("").props("data-testid=phase")
        bar = ui.linear_progress(value=0, show_value=False).classes("w-48").props("data-testid=progress color=white")
        cancel = ui.button("Cancel", on_click=lambda: wb.job.cancel() if wb.job else None).props(
            "data-testid=cancel flat color=white")

    def tick() -> None:
        j = wb.job
        running = j is not None and not j.finished
        cancel.set_visibility(running)
        bar.set_visibility(running)
        if running:
            share = j.share
            bar.set_value(share if share is not None else 0)
            phase.set_text(f"{j.name}: {j.phase}" + (f" {100 * share:.0f}%" if share is not None else ""))
        elif j is not None:
            phase.set_text(f"{j.name}: {'cancelled' if j.cancelled else 'failed' if j.error else 'done'} "
                           f"in {j.seconds:.1f} s")

    ui.timer(0.25, tick)
    message = ui.label("").props("data-testid=message").classes("q-ma-sm")

    with ui.tabs().props("data-testid=tabs") as tabs:
        t_data, t_roles = ui.tab("Data"), ui.tab("Roles")
        t_check, t_explore, t_release = ui.tab("Check & risk"), ui.tab("Explore"), ui.tab("Release")
    with ui.tab_panels(tabs, value=t_data).classes("w-full"):
        # -- Data ------------------------------------------------------------------------------------
        with ui.tab_panel(t_data):
            with ui.row().classes("items-end"):
                path = ui.input("open a CSV or Parquet file (path)").props("data-testid=file-path").classes("w-96")
                ui.button("Open", on_click=lambda: open_file()).props("data-testid=open-file")
            sources = ui.table(columns=[{"name": c, "label": c, "field": c} for c in ("name", "rows", "columns")],
                               rows=[], row_key="name").props("data-testid=sources dense").classes("w-full")
            prof = ui.table(columns=[{"name": c, "label": c, "field": c}
                                     for c in ("column", "type", "distinct", "nulls", "hint")],
                            rows=[], row_key="column").props("data-testid=profile dense").classes("w-full")
            hist = ui.echart(bars([], [], "pick a column")).props("data-testid=histogram").classes("w-full h-64")

        # -- Roles -----------------------------------------------------------------------------------
        with ui.tab_panel(t_roles):
            roles_box = ui.column().classes("w-full").props("data-testid=roles")
            with ui.row().classes("items-end"):
                ui.select(list(METHODS), value="mondrian", label="method",
                          on_change=lambda e: (st.update(method=e.value), show_spec())).props("data-testid=method")
                ui.input("release table", value="release",
                         on_change=lambda e: (st.update(table=e.value), show_spec())).props("data-testid=out-table")
                ui.button("Download spec", on_click=lambda: download_spec()).props("data-testid=download-spec")
                ui.upload(label="load a spec", auto_upload=True, on_upload=lambda e: load_spec(e)).props(
                    "data-testid=load-spec accept=.yaml,.yml")
            spec_view = ui.code("", language="yaml").props("data-testid=spec").classes("w-full")

        # -- Check & risk ----------------------------------------------------------------------------
        with ui.tab_panel(t_check):
            with ui.grid(columns=4).classes("w-full"):
                for f in model_fields():
                    if f["kind"] == "choice":
                        w = ui.select(f["choices"], value=f["default"], label=f["flag"])
                    else:
                        w = ui.input(f["flag"])
                    w.props(f"data-testid=model-{f['dest']}").props(f'title="{f["help"].replace(chr(34), chr(39))}"')
                    st["fields"][f["dest"]] = w
            with ui.row().classes("items-center"):
                ui.button("Check", on_click=lambda: check()).props("data-testid=check")
                suda = ui.checkbox("with SUDA2's special uniques (slower on big tables)", value=True).props(
                    "data-testid=suda")
            verdicts = ui.table(columns=[{"name": c, "label": c, "field": c} for c in ("model", "holds", "achieved",
                                                                                       "violating")],
                                rows=[], row_key="model").props("data-testid=verdicts dense")
            with ui.row().classes("w-full"):
                classes_chart = ui.echart(bars([], [], "class sizes")).props("data-testid=classes").classes("w-1/2 h-64")
                risk_table = ui.table(columns=[{"name": c, "label": c, "field": c} for c in ("measure", "value")],
                                      rows=[], row_key="measure").props("data-testid=risk dense")
            riskiest = ui.table(columns=[], rows=[]).props("data-testid=riskiest dense").classes("w-full")

        # -- Explore ---------------------------------------------------------------------------------
        with ui.tab_panel(t_explore):
            with ui.row().classes("items-end"):
                ks = ui.input("k values (full-domain: its lattice at the Check tab's k)", value="2,5,10,20,50").props("data-testid=ks")
                ui.button("Explore", on_click=lambda: explore()).props("data-testid=explore")
            frontier = ui.echart({"xAxis": {"name": "loss (NCP)"}, "yAxis": {"name": "highest risk"}, "series": []},
                                 on_point_click=lambda e: pick(e.data)).props("data-testid=frontier").classes("w-full h-72")
            points_table = ui.table(columns=[{"name": c, "label": c, "field": c} for c in (
                "point", "holds", "loss", "highest risk", "average risk", "classes")], rows=[], row_key="point").props(
                "data-testid=points dense").classes("w-full")
            points_table.on("rowClick", lambda e: pick({"key": e.args[1]["point"]}))
            detail = ui.column().classes("w-full").props("data-testid=detail")

        # -- Release ---------------------------------------------------------------------------------
        with ui.tab_panel(t_release):
            chosen = ui.label("the release is made with the Roles tab's choices and the Check tab's models").props(
                "data-testid=chosen")
            with ui.row().classes("items-end"):
                ui.checkbox("replace the table if it exists",
                            on_change=lambda e: (st.update(replace=e.value), show_spec())).props("data-testid=replace")
                ui.button("Write release", on_click=lambda: write()).props("data-testid=write")
            verdict = ui.label("").props("data-testid=verdict")
            report_box = ui.column().classes("w-full")
            ledger_table = ui.table(columns=[{"name": c, "label": c, "field": c} for c in (
                "id", "created", "series", "source", "method", "mode", "rows", "achieved",
                "promises or composed with")],
                rows=[], row_key="id").props("data-testid=ledger dense").classes("w-full")

    # -- behaviour -----------------------------------------------------------------------------------
    def refresh_sources() -> None:
        try:
            sources.rows = wb.sources()
        except Exception as e:  # noqa: BLE001
            fail(e)
        sources.update()

    async def choose(name: str) -> None:
        got = await job("profile", lambda: wb.profile(name))
        if got is None:
            return
        st.update(source=name, columns=got, point=None)
        rows = next((s["rows"] for s in sources.rows if s["name"] == name), 0)
        suda.set_value(rows <= SUDA_ROWS)
        st["roles"] = {c["column"]: ("identifier" if c["hint"] == "likely identifier" else
                                     "person" if c["hint"] == "likely person key" else "drop") for c in got}
        prof.rows = got
        prof.update()
        show_roles()
        say(f"{name}: {len(got)} columns")

    async def column_histogram(col: str) -> None:
        got = await job("histogram", lambda: wb.histogram(st["source"], col))
        if got is not None:
            hist.options.update(bars(got[0], got[1], col))
            hist.update()

    sources.on("rowClick", lambda e: choose(e.args[1]["name"]))
    prof.on("rowClick", lambda e: column_histogram(e.args[1]["column"]))

    async def open_file() -> None:
        try:
            name = wb.open_file(path.value or "")
        except Exception as e:  # noqa: BLE001
            fail(e)
            return
        refresh_sources()
        await choose(name)

    def show_roles() -> None:
        roles_box.clear()
        with roles_box:
            for c in st["columns"]:
                name = c["column"]
                with ui.row().classes("items-center"):
                    ui.label(name).classes("w-40 text-bold")
                    ui.toggle(list(ROLES), value=st["roles"][name],
                              on_change=lambda e, n=name: (st["roles"].update({n: e.value}), show_spec())).props(
                        f"data-testid=role-{name} dense no-caps")
                    ui.input("hierarchy (e.g. {intervals: [5, 10]} or a file)", value=st["hier"].get(name, ""),
                             on_change=lambda e, n=name: (st["hier"].update({n: e.value}), show_spec())).props(
                        f"data-testid=hier-{name} dense").classes("w-72")
                    ui.label(c["hint"]).classes("text-caption text-grey")
        show_spec()

    def params() -> dict[str, Any]:
        return model_params({d: w.value for d, w in st["fields"].items()})

    def current_spec(privacy: dict[str, Any] | None = None) -> dict[str, Any]:
        import yaml

        hier = {}
        for c, text in st["hier"].items():
            if text and st["roles"].get(c) == "qi":
                hier[c] = yaml.safe_load(text) if text.strip().startswith("{") else text
        if privacy is None:
            try:
                privacy = spec_privacy(params())
            except Exception:  # noqa: BLE001 - no model yet: the spec shows none
                privacy = {}
        return wb.spec(st["source"] or "", st["roles"], hier, st["method"], privacy, st["table"], st["replace"])

    def show_spec() -> None:
        try:
            spec_view.set_content(wb.spec_yaml(current_spec()))
        except Exception as e:  # noqa: BLE001
            fail(e)

    def download_spec() -> None:
        ui.download.content(wb.spec_yaml(current_spec()), "release.yaml")

    async def load_spec(e: Any) -> None:
        try:
            got = wb.read_spec(await e.file.text())
        except Exception as err:  # noqa: BLE001
            fail(err)
            return
        refresh_sources()
        await choose(got["source"])
        st["roles"].update({c: got["roles"].get(c, "drop") for c in st["roles"]})
        for c, v in got["raw"].get("attributes", {}).items():
            if isinstance(v, dict) and v.get("hierarchy") is not None:
                h = v["hierarchy"]
                st["hier"][c] = h if isinstance(h, str) else wb.spec_yaml(h).strip()
        st.update(method=got["method"], table=got["table"])
        for key, value in got["privacy"].items():
            w = st["fields"].get(key)
            if w is not None:
                w.set_value(str(value["value"] if isinstance(value, dict) and "value" in value else value))
        show_roles()
        say("spec loaded")

    async def check() -> None:
        if not st["source"]:
            return fail("open a source first (Data)")
        try:
            p = params()
        except Exception as e:  # noqa: BLE001
            return fail(e)
        rep = await job("check", lambda: wb.check(st["source"], dict(st["roles"]), p, suda=bool(suda.value)))
        if rep is None:
            return
        verdicts.rows = [{"model": v["model"], "holds": "holds" if v["holds"] else "FAILS",
                          "achieved": achieved(v.get("achieved")), "violating": v.get("violating_groups")}
                         for v in rep["verdicts"]]
        verdicts.update()
        hist_ = rep["classes"].get("histogram", [])
        classes_chart.options.update(bars([str(h["size_from"]) if h["size_from"] == h["size_to"] else
                                           f"{h['size_from']}-{h['size_to']}" for h in hist_],
                                          [h["classes"] for h in hist_], "classes by size"))
        classes_chart.update()
        risk_table.rows = risk_rows(rep)
        risk_table.update()
        r = rep["riskiest"]
        riskiest.columns = [{"name": c, "label": c, "field": c} for c in r["columns"]]
        riskiest.rows = [dict(zip(r["columns"], row)) for row in r["rows"]]
        riskiest.update()
        say("every model holds") if rep["holds"] else fail("a model fails: see the verdicts")
        show_spec()

    async def explore() -> None:
        """Mondrian (or Anatomy): the method at each k of the list. Full-domain: its lattice."""
        if not st["source"]:
            return fail("open a source first (Data)")
        try:
            values = {d: w.value for d, w in st["fields"].items()}
            if st["method"] == "fulldomain":
                k = int(values["k"]) if str(values.get("k") or "").strip() else None
                base = current_spec({"k": k or 2})
                points = await job("lattice", lambda: wb.lattice(base, k))
            else:
                k_list = sorted({int(x) for x in ks.value.replace(" ", "").split(",") if x})
                if not k_list or min(k_list) < 2:
                    raise ValueError("give k values of 2 or more, comma-separated")
                privacy = {n: v for n, v in spec_privacy(model_params({**values, "k": k_list[0]})).items() if n != "k"}
                base = current_spec(privacy)  # the other models held, k from the list
                points = await job("explore", lambda: wb.explore(base, k_list))
                for p in points or []:
                    p["key"] = f"k={p['k']}"
        except Exception as e:  # noqa: BLE001
            return fail(e)
        if points is None:
            return
        st["explored"], st["base"] = {p["key"]: p for p in points}, base
        ok = [p for p in points if p["holds"]]
        bad = [p for p in points if not p["holds"]]
        lattice = st["method"] == "fulldomain"
        frontier.options["series"] = [
            {"type": "scatter", "name": name, "symbolSize": 9 if lattice else 14, "itemStyle": {"color": color},
             "data": [{"value": [p["loss"], p["risk"]], "name": p["key"], "key": p["key"]} for p in group],
             "label": {"show": not lattice, "formatter": "{b}", "position": "top"}}
            for name, group, color in (("holds", ok, "#4a7fb5"), ("fails", bad, "#c0392b"))]
        frontier.options["legend"] = {"data": ["holds", "fails"]}
        frontier.options["xAxis"] = {"name": "loss (level / height)" if lattice else "loss (NCP)"}
        frontier.update()
        points_table.rows = [{"point": p["key"], "holds": "holds" if p["holds"] else "FAILS",
                              "loss": round(p["loss"], 6), "highest risk": round(p["risk"], 6),
                              "average risk": round(p["average_risk"], 6) if "average_risk" in p else "",
                              "classes": p["classes"]} for p in sorted(points, key=lambda p: (not p["holds"], p["loss"]))]
        points_table.update()
        say(f"{len(points)} {'lattice nodes' if lattice else 'releases'} explored: click a point (or a row)")

    async def pick(data: Any) -> None:
        point = st.get("explored", {}).get(data.get("key") if isinstance(data, dict) else None)
        if point is None:
            return
        st["point"] = point
        if "levels" in point:  # a lattice node: generalized for its views
            table = await job("node", lambda: wb.node(st["base"], point["levels"]))
            if table is None:
                return
            chosen.set_text(f"explored: the node {point['key']}; full-domain releases the node of least loss that meets "
                            f"every model (its search), with the Check tab's models")
        else:
            table = point["table"]
            st["fields"]["k"].set_value(str(point["k"]))
            chosen.set_text(f"chosen in Explore: k = {point['k']} (loss {point['loss']:.4f}, highest risk "
                            f"{point['risk']:.4f})")
        detail.clear()
        qi = [c for c, r in st["roles"].items() if r == "qi"]
        names, rows = await run.io_bound(wb.sample, table)
        with detail:
            ui.label(f"{point['key'].replace('k=', 'k = ')}: {point['classes']} classes, loss {point['loss']:.4f}, "
                     f"highest risk {point['risk']:.4f}").props("data-testid=point")
            ui.echart(bars(list(point["by_qi"]), [round(v, 4) for v in point["by_qi"].values()],
                           "loss by column")).classes("w-full h-56")
            ui.table(columns=[{"name": c, "label": c, "field": c} for c in names],
                     rows=[dict(zip(names, r)) for r in rows]).props("dense").classes("w-full")
            col = ui.select(qi, value=qi[0] if qi else None, label="before and after").props("data-testid=compare")
            pair = ui.row().classes("w-full")

        async def compare() -> None:
            got = await job("compare", lambda: wb.before_after(st["source"], table, col.value))
            if got is None:
                return
            pair.clear()
            with pair:
                ui.echart(bars(*got["before"], f"{col.value}: source", "#888")).classes("w-5/12 h-64")
                ui.echart(bars(*got["after"], f"{col.value}: {point['key']}")).classes("w-5/12 h-64")

        col.on_value_change(compare)
        await compare()

    async def write() -> None:
        if not st["source"]:
            return fail("open a source first (Data)")
        if wb.exists(st["table"]) and not st["replace"]:
            with ui.dialog() as dialog, ui.card():
                ui.label(f"{st['table']} exists. Replace it?")
                with ui.row():
                    ui.button("Replace", on_click=lambda: dialog.submit(True)).props("data-testid=confirm-replace")
                    ui.button("Keep it", on_click=lambda: dialog.submit(False))
            if not await dialog:
                return say("nothing was written")
            st["replace"] = True
        try:
            spec = current_spec()
        except Exception as e:  # noqa: BLE001
            return fail(e)
        got = await job("release", lambda: wb.release(spec))
        if got is None:
            return
        verdict.set_text(f"{got['line']}  ({got['rows']} rows written to {got['table']})")
        report_box.clear()
        with report_box:
            ui.element("iframe").props(f"src=/report/{got['report']} data-testid=report").classes("w-full").style(
                "height: 600px; border: 1px solid #ccc")
        ledger_table.rows = wb.ledger()
        ledger_table.update()
        say("written")

    refresh_sources()
    try:
        ledger_table.rows = wb.ledger()
    except Exception as e:  # noqa: BLE001
        fail(e)


def achieved(a: Any) -> str:
    """A verdict's achieved parameter as the CLI prints it: ``k = 5``."""
    if isinstance(a, dict):
        return ", ".join(f"{k} = {v}" for k, v in a.items())
    return "" if a is None else str(a)


def risk_rows(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The risk summary's rows: the three attacker models, uniques and SUDA's special uniques."""
    rows = []
    s = rep.get("risk_models", {}).get("sample", {})
    for who in ("prosecutor", "journalist"):
        if who in s:
            rows.append({"measure": f"{who}: highest", "value": f"{float(s[who]['highest']):.4f}"})
            rows.append({"measure": f"{who}: average", "value": f"{float(s[who]['average']):.4f}"})
    if "marketer" in s:
        rows.append({"measure": "marketer", "value": f"{float(s['marketer']):.4f}"})
    if "sample_uniqueness" in s:
        rows.append({"measure": "sample uniqueness", "value": f"{float(s['sample_uniqueness']):.4f}"})
    su = rep.get("risk_models", {}).get("suda")
    if su:
        rows.append({"measure": "SUDA: records with a special unique", "value": str(su.get("records_with_msu"))})
    return rows


__all__ = ["build", "risk_rows"]

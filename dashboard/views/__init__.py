"""One module per page with charts: its URL state, and exactly the figures and tables it draws.

`views.<page>.State.from_query(query, run)` parses the page's URL keys (shared
parsers in `params`), `figures(run, state)` returns the charts the page draws (and each view
the rows and texts beside them). Pages turn Dash events into a State and call these; the PNG
export (`exports.page_figures`) calls the same functions, so an export equals
the screen by construction. Nothing here imports Dash; results are cached per
(run, state part) by `cache.per_run`.
"""

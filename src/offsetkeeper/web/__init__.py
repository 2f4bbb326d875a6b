"""The web dashboard (`offsetkeeper ui`): groups, lag over time, a reset wizard with plan
preview, snapshots, backups. Built on the operations layer (`offsetkeeper.ops`): it can do
nothing the command line cannot, and nothing unsafely. The group pages' data (overview, group
detail, history reads) comes from `ops.group_pages` and `ops.history_view`, a share or streams
group's page from `ops.typed_group_pages`; one bad item of a page becomes its row's error
through `ops.itemerr`.

    app.py        create_app: routes and middleware
    core.py       settings, application state, guards (auth, CSRF, read-only), rendering
    pages.py      read-only pages: groups, group, snapshots, backups, login
    wizard.py     the reset wizard, execution of previewed plans, rollback
    server.py     `offsetkeeper ui`: settings from flags/config/environment, uvicorn
    clusters.py   the configured clusters, one shared admin facade each
    backups.py    backups, restores, mappings, quick validation (read-only, no Spark)
    security.py   tokens, sessions, CSRF, loopback rules
    forms.py      POSTed forms read as a bounded stream, the CSRF token checked first
    svg.py        sparklines and time charts drawn on the server
    templates/, static/   Jinja2 templates (autoescaped) and the CSS/JS shipped in the package
"""

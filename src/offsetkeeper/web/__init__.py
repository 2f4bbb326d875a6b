"""The web dashboard (`offsetkeeper ui`): groups, lag over time, a reset wizard with plan
preview, snapshots, backups. Built on the operations layer (`offsetkeeper.ops`): it can do
nothing the command line cannot, and nothing unsafely.

    app.py        create_app: routes and middleware
    core.py       settings, application state, guards (auth, CSRF, read-only), rendering
    pages.py      read-only pages: groups, group, snapshots, backups, login
    wizard.py     the reset wizard, execution of previewed plans, rollback
    server.py     `offsetkeeper ui`: settings from flags/config/environment, uvicorn
    service.py    page data from ops (groups, group) and previewed plans awaiting confirmation
    data.py       the ONE adapter to the history store
    backups.py    backups, restores, mappings, quick validation (read-only, no Spark)
    security.py   tokens, sessions, CSRF, loopback rules
    forms.py      POSTed forms read as a bounded stream, the CSRF token checked first
    itemerr.py    one bad item (file, store record, destination) -> its row's error, logged
    svg.py        sparklines and time charts drawn on the server
    templates/, static/   Jinja2 templates (autoescaped) and the CSS/JS shipped in the package
"""

"""The browser workbench (``anonydb ui``, ``pip install 'anonydb[ui]'``): :mod:`.workbench` holds
what it does (no browser needed), :mod:`.pages` the page, :mod:`.security` the token and CSRF
guard, :mod:`.server` the command. docs/ui.md."""

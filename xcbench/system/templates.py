"""Render the project's Jinja2 templates (xrootd/cmsd configs, fio jobs) with StrictUndefined.

Templates are package data (e.g. ``xcbench.xrootd_configs``, ``xcbench.fio_jobs``), found through
importlib.resources so that editable and regular installs behave the same. A template that uses
a name the caller did not pass fails loudly instead of rendering an empty string into a config.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import jinja2

from xcbench.errors import XcbError


def _loader(package: str):
    def load(name: str):
        try:
            return resources.files(package).joinpath(name).read_text()
        except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
            return None
    return load


@cache
def environment(package: str) -> jinja2.Environment:
    """A Jinja2 environment over ``package``'s files (``{% include %}`` works within it)."""
    return jinja2.Environment(loader=jinja2.FunctionLoader(_loader(package)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, autoescape=False)


def render(package: str, template: str, /, **ctx) -> str:
    """Render ``template`` of ``package`` with ``ctx``; XcbError names the missing variable.

    (package and template are positional-only, so ``name=``/``package=`` can be template variables.)
    """
    return render_with(environment(package), f"{package}/{template}", template, **ctx)


def render_with(env: jinja2.Environment, where: str, name: str, /, **ctx) -> str:
    """Render ``name`` from ``env``; every template error becomes one XcbError line that
    starts with ``where`` (the package/path a user can find the template at)."""
    try:
        return env.get_template(name).render(**ctx)
    except jinja2.TemplateNotFound as e:
        raise XcbError(f"{where}: template not found") from e
    except jinja2.UndefinedError as e:
        raise XcbError(f"{where}: {e.message}") from e
    except jinja2.TemplateSyntaxError as e:
        raise XcbError(f"{e.filename or where}:{e.lineno}: {e.message}") from e

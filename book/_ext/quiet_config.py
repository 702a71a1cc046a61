"""A quieter ``make book``: myst-parser and myst-nb print their whole configuration (two lines of about 800
characters each) when the build starts; this keeps their names and versions and drops the settings, which
``_config.yml`` holds anyway."""

import logging


class _VersionOnly(logging.Filter):
    """Turn "myst v3.0.1: MdParserConfig(...)" into "myst v3.0.1 (configuration: _config.yml)"."""

    def filter(self, record):
        message = str(record.msg)
        if " v%s:" in message and len(record.args or ()) == 2:
            package = "myst-nb" if "myst-nb" in message else "myst"
            record.msg = package + " v%s (configuration: _config.yml)"
            record.args = (record.args[0],)
        return True


def setup(app):
    for name in ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext"):
        logging.getLogger(name).addFilter(_VersionOnly())
    return {"parallel_read_safe": True, "parallel_write_safe": True}

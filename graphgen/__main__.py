"""``python -m graphgen``: the same command line as ``graphgen``."""

from graphgen.cli import app

if __name__ == "__main__":
    app(prog_name="graphgen")

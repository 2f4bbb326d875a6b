"""Where the config file is looked for (no pydantic here: commands check for the file before
loading its models)."""

from pathlib import Path

CONFIG_ENV = "OFFSETKEEPER_CONFIG"
DEFAULT_CONFIG_PATH = Path("~/.config/offsetkeeper/config.yaml")

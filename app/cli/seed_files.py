"""A seed file written beside the others (``prices import``): the seed directory as it is without the
file, to read what the file joins and to check the directory with it, and the file written whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from app.kb.seeds import SeedError, SeedSet, read_seeds


class SeedDir:
    """The seed directory as it is without the file being written (a temporary directory of links),
    to read what the new file joins and to check the directory with it."""

    def __init__(self, seeds: Path, out: Path) -> None:
        self.seeds, self.out = seeds, out.resolve()
        self._tmp = tempfile.TemporaryDirectory(prefix="compute-advisor-import-")
        self.path = Path(self._tmp.name)
        for file in sorted([*seeds.glob("*.yaml"), *seeds.glob("*.yml")]):
            if file.resolve() != self.out:
                (self.path / file.name).symlink_to(file.resolve())

    def read(self) -> SeedSet:
        """The seeds of the directory but the file being written, each record naming its real file."""
        try:
            found = read_seeds(self.path)
        except SeedError as exc:
            raise exc.relocated(self._real) from None
        found.files = {key: self._real(file) for key, file in found.files.items()}
        return found

    def _real(self, text: str) -> str:
        return text.replace(str(self.path / self.out.name), str(self.out)).replace(str(self.path), str(self.seeds))

    def check_with(self, written: Path) -> SeedError | None:
        """None when the seed directory with ``written`` in it passes ``seeds check``, else its problems."""
        link = self.path / self.out.name
        if link.exists():  # --out lies elsewhere and a seed file has its name: check it beside that one
            link = self.path / f"imported-{self.out.name}"
        link.symlink_to(written.resolve())
        try:
            read_seeds(self.path)
        except SeedError as exc:
            return exc.relocated(lambda text: self._real(text.replace(str(link), str(self.out))))
        return None

    def close(self) -> None:
        self._tmp.cleanup()


def write_whole(out: Path, text: str) -> None:
    """``text`` into ``out`` all at once: a temporary file beside it, renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""The streams, size_class and cores dimensions: crossed like origins, ids of cells that do not
set them unchanged, bad values one line naming file, entry and field."""

from __future__ import annotations

import pytest

from tests.support.matrices import TMPFS as BASE
from tests.support.matrices import load_text as load
from xcbench.campaign.dataset import file_sizes
from xcbench.cell import Cell
from xcbench.cell.classes import SIZE_CLASSES, campaign_sizes, class_range
from xcbench.errors import XcbError


def test_cells_without_new_dims_keep_their_ids(tmp_path):
    plain = load(tmp_path).cells
    assert len(plain) == 1
    assert set(plain[0].settings()) & set(Cell.OPTIONAL) == set()
    # the id is a hash of the same settings as before the fields existed
    from xcbench.matrix import cell_id
    assert plain[0].id == cell_id(plain[0].settings())


def test_streams_sizes_and_cores_are_crossed(tmp_path):
    m = load(tmp_path, """
    include:
      - {backend: tmpfs, size: 2G, streams: [1, 4, 16], cores: [0.5, 1], size_class: [small, medium],
         size_scale: 4, origins: [1, 2]}
    """)
    new = [c for c in m.cells if c.streams]
    assert len(new) == 3 * 2 * 2 * 2
    assert len({c.id for c in new}) == len(new)
    c = next(c for c in new if (c.streams, c.cores, c.size_class, c.origins) == (4, 0.5, "medium", 2))
    assert c.label.endswith("o2 push 0.5c s4 medium/4")
    lo, hi = class_range("medium", 4)
    assert (lo, hi) == (2 << 20, 256 << 20)
    # the dataset draws uniformly between the class bounds
    sizes = file_sizes(200, seed=1, **{("mean" if k == "file_size" else
                                         "dist" if k == "size_dist" else "spread"): v
                                        for k, v in campaign_sizes(c).items()})
    assert lo <= min(sizes) and max(sizes) <= hi and max(sizes) > (lo + hi) // 2 > min(sizes)


def test_unscaled_class_keeps_published_bounds():
    assert SIZE_CLASSES["small"] == (8 << 10, 4 << 20)
    assert class_range("large") == (2 << 30, 8 << 30)


def test_a_class_that_does_not_fit_the_tmpfs_names_the_scale(tmp_path):
    with pytest.raises(XcbError) as e:
        load(tmp_path, "  # \n", base=BASE.replace("files: 4}", "files: 4, size_class: [large]}"))
    msg = str(e.value)
    assert "m.yaml: backends.tmpfs: size_class:" in msg and "size_scale: 16" in msg


@pytest.mark.parametrize("extra, field", [
    ("streams: [0]", "streams"), ("cores: [0]", "cores"), ("cores: [fast]", "cores"),
    ("size_class: [huge]", "size_class"), ("size_scale: 0", "size_scale"),
])
def test_bad_values_are_one_line(tmp_path, extra, field):
    with pytest.raises(XcbError) as e:
        load(tmp_path, base=BASE.replace("files: 4}", "files: 4, " + extra + "}"))
    assert f": defaults: {field}:" in str(e.value)
    assert "\n" not in str(e.value)

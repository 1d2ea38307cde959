"""The integration shards of `make test` share the test files (scripts/run_tests.py): each shard's pytest
is given every file, in the same order, and runs the files it claims first, claiming each in the folder
VOLFENCE_SHARD_CLAIMS names as it reaches it. So the shards end within about a file of each other,
whatever each file takes on the day; a file dealt to a shard ahead could not follow that.

A pytest plugin (tests/integration/conftest.py imports its hook); without VOLFENCE_SHARD_CLAIMS it
leaves pytest's own loop alone.
"""

import os

import pytest

VARIABLE = "VOLFENCE_SHARD_CLAIMS"


def claim_file(folder, name):
    """True for the first process that claims `name` in `folder`, False for every later one."""
    try:
        os.close(os.open(os.path.join(folder, name.replace(os.sep, "__")), os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                         0o644))
        return True
    except FileExistsError:
        return False


def files_of(items):
    """[(path, [item ...])] in the order of items, a file's items together as pytest collects them."""
    files = []
    for item in items:
        if not files or files[-1][0] != item.path:
            files.append((item.path, []))
        files[-1][1].append(item)
    return files


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """pytest's own loop over the collected tests (_pytest/main.py), each file's tests run only in the
    shard that claimed the file. The next file is claimed as the last test of a file starts: that test
    must know what runs after it (`nextitem`), for the file's module-scoped fixtures to end then."""
    folder = os.environ.get(VARIABLE)
    if not folder or session.config.option.collectonly:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted("%d errors during collection" % session.testsfailed)
    root = str(session.config.rootpath)
    claimed = ((path, items) for path, items in files_of(session.items)
               if claim_file(folder, os.path.relpath(str(path), root)))
    current = next(claimed, None)
    while current is not None:
        items, following = current[1], None
        for index, item in enumerate(items):
            if index + 1 < len(items):
                nextitem = items[index + 1]
            else:
                following = next(claimed, None)
                nextitem = following[1][0] if following else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        current = following
    return True

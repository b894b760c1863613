"""Shared base of the to_postgres tests: one real PostgreSQL server per test module
(pg_server.PgServer), sluiced as a real process (tests/integration/sluice_it.py), and psql
to read what reached the table."""

import itertools
import json
import unittest

from pg_server import PgServer
from sluice_it import SluiceTestCase

_table_numbers = itertools.count(1)


class PgTestCase(SluiceTestCase):
    server_settings = None  # extra server settings of the module's server
    server = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = PgServer(cls.server_settings).start()

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.destroy()
        super().tearDownClass()

    def new_table(self, columns_sql):
        """Creates a table with a fresh name; returns the name."""
        name = f"t{next(_table_numbers)}"
        self.server.psql(f"CREATE TABLE {name} ({columns_sql})")
        return name

    def rows(self, sql):
        return self.server.psql(sql)

    def prepared_xacts(self):
        return self.server.psql("SELECT gid FROM pg_prepared_xacts ORDER BY gid")

    def sink_toml(self, table, columns, **keys):
        """A [sinks.db] table writing to `table` of the module's server."""
        cols = ", ".join(f"{json.dumps(c)} = {json.dumps(src)}" for c, src in columns.items())
        text = f"""
[sinks.db]
type = "to_postgres"
inputs = [{json.dumps(keys.pop("input", "in"))}]
conninfo = {json.dumps(keys.pop("conninfo", self.server.conninfo()))}
table = {json.dumps(table)}
columns = {{ {cols} }}
"""
        for k, v in keys.items():
            text += f"{k} = {v if isinstance(v, str) and v.startswith('{') else json.dumps(v)}\n"
        return text


__all__ = ["PgTestCase", "unittest"]

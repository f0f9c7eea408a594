"""Transactional submit (docs/python.md): the application's row and its job commit
together, or neither exists. PostgreSQL only: TASKYARD_DB=postgresql://…"""

import os

from shop import send_receipt, yard
from sqlalchemy import create_engine, text

url = os.environ["TASKYARD_DB"].replace("postgresql://", "postgresql+psycopg://", 1)
app = create_engine(url)  # the application's own engine, on the same database
with app.begin() as conn:
    conn.execute(text("CREATE TABLE IF NOT EXISTS orders (id serial PRIMARY KEY, "
                      "customer text NOT NULL, amount int NOT NULL)"))

with app.connect() as conn:                 # rolled back: neither the order nor its job
    conn.execute(text("INSERT INTO orders (customer, amount) VALUES ('bob', 5)"))
    lost = send_receipt.options(connection=conn).submit("bob", 5)
    conn.rollback()

with app.begin() as conn:                   # committed: both, even if we died right after
    conn.execute(text("INSERT INTO orders (customer, amount) VALUES ('ada', 30)"))
    kept = send_receipt.options(connection=conn).submit("ada", 30)

print("rolled back:", yard.store.jobs.get(lost.id))
print("committed:", kept.result(timeout=60))

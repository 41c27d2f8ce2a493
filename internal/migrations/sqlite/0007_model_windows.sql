-- 0007: context windows reported by model endpoints, per endpoint and model
-- (discovered or learned from a refusal), so a restart need not ask again.

CREATE TABLE model_windows (
    endpoint   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    tokens     INTEGER NOT NULL,
    source     TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (endpoint, model)
) STRICT;

-- 0007: context windows reported by model endpoints, per endpoint and model,
-- the same version as sqlite/0007.

CREATE TABLE model_windows (
    endpoint   text COLLATE "C" NOT NULL,
    model      text COLLATE "C" NOT NULL,
    tokens     integer     NOT NULL,
    source     text        NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (endpoint, model)
);

"""`DataFrame.mapInArrow` without pandas.

PySpark's public `mapInArrow` builds its UDF through `pandas_udf`, which refuses to run when
pandas is not installed — although an Arrow map needs no pandas at all, on the driver or on the
executors. offsetkeeper does not depend on pandas, so when pandas is missing the same Arrow UDF
(eval type SQL_MAP_ARROW_ITER_UDF) is built directly and handed to the JVM's `mapInArrow`,
which is exactly what the public method does after its pandas check.
"""

from __future__ import annotations

import importlib.util


def map_in_arrow(df, func, schema):
    """`df.mapInArrow(func, schema)`, also where pandas is not installed."""
    if importlib.util.find_spec("pandas") is not None:
        return df.mapInArrow(func, schema)
    from pyspark.sql import DataFrame
    from pyspark.sql.udf import UserDefinedFunction
    from pyspark.util import PythonEvalType

    udf = UserDefinedFunction(func, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    column = udf(*[df[c] for c in df.columns])
    return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)

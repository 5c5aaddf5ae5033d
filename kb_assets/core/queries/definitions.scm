; Definitions and imports of a Python module, with semantic capture names (as in Aider's tags).
; The span walk does not run this query (one cursor walk is cheaper); it is the independent oracle
; the span tests compare against, and a ready-made query for tools that only need names.

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(function_definition
  name: (identifier) @name.definition.function) @definition.function

[
  (import_statement)
  (import_from_statement)
  (future_import_statement)
] @definition.import

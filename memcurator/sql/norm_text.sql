-- The normalised form of the column text (an expression, included where it is needed: memory_writes.sql
-- for the entry ids it derives, entries.sql for each entry's current version; core.memory_writes does
-- not store it): lower case, whitespace runs collapsed to one space, Unicode space separators trimmed.
-- trim() strips the space separators (category Zs) at both ends but reads the whole text to do so (2.3 s
-- at 1M texts): only a text that starts or ends with one is trimmed. The regex runs only where there is
-- a run to collapse (two spaces, or a tab, newline, form feed or carriage return: what RE2's \s matches
-- besides the space): on long texts the regex was most of the time the flattening of writes took.
-- (The trimmed text is written out in both branches: an expression has no names for its parts.)
lower(case when contains(text, '  ') or contains(text, chr(9)) or contains(text, chr(10))
                or contains(text, chr(12)) or contains(text, chr(13))
           then regexp_replace(case when list_bool_or(list_transform(
                        [' ', chr(160), chr(5760), chr(8192), chr(8193), chr(8194), chr(8195), chr(8196), chr(8197),
                         chr(8198), chr(8199), chr(8200), chr(8201), chr(8202), chr(8239), chr(8287), chr(12288)],
                        z -> starts_with(text, z) or ends_with(text, z)))
                   then trim(text) else text end, '\s+', ' ', 'g')
           else case when list_bool_or(list_transform(
                        [' ', chr(160), chr(5760), chr(8192), chr(8193), chr(8194), chr(8195), chr(8196), chr(8197),
                         chr(8198), chr(8199), chr(8200), chr(8201), chr(8202), chr(8239), chr(8287), chr(12288)],
                        z -> starts_with(text, z) or ends_with(text, z)))
                   then trim(text) else text end
      end)

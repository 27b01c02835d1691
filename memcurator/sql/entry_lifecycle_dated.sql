-- What core.entry_lifecycle says about the night's date alone, set for every row after the rules
-- (entry_lifecycle.sql) wrote the rows of the entries they derived: days since the last activity and
-- the last write, and the reasons that quote them (two statements).
update core.entry_lifecycle set
    idle_days = (epoch($as_of::timestamp) - epoch(last_activity_at)) / 86400.0,
    age_days = (epoch($as_of::timestamp) - epoch(last_written_at)) / 86400.0;

update core.entry_lifecycle set
    reason = case rule
        when 'session_material_idle' then 'session material not recalled for ' || floor(idle_days)::int || ' days'
        else 'not recalled for ' || floor(idle_days)::int || ' days and generality ' || round(generality, 2)
            || ' < ' || $min_generality
    end
where rule in ('session_material_idle', 'decay');

DROP INDEX inspection_rules_phase_idx;
DROP TABLE inspection_rules;

-- The public codebook of diagnoses: the group keys of visits_dp, known before any data is read, so
-- that every key is released (with no threshold) and the codes' presence says nothing of a patient.
select diagnosis from (values ('asthma'), ('back pain'), ('diabetes'), ('flu'), ('hypertension'), ('migraine'))
    as codes (diagnosis)

-- supabash: the last step of CREATE EXTENSION (pgrx "finalize": after every other object).
-- Every upgrade script supabash--A--B.sql ends with the same two calls, so an installed and an
-- upgraded database hold the same privileges and pass the same check.
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';

"""CronJob schedules the cluster tier tries on the hooks' reading and on the real parts' (the API server, the cron
parser the CronJob controller runs)."""

# Taken and refused alike, near each rule of the parser: bounds, names, ranges, steps, lists, macros.
SCHEDULES = (
    "0 0 * * *", "*/5 * * * *", "59 23 31 12 6", "0 0 1 1 0", "0-59/15 * * * *", "5/15 * * * *",
    "0 0 * JAN-DEC SUN-SAT", "0 0 * jan,Jul mon", "0 0 ? * ?", "1,,2 * * * *", ", * * * *", "*-5 * * * *",
    "+5 * * * *", "0 0 31 2 *", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
    "60 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 32 * *", "0 0 * 0 *", "0 0 * 13 *", "0 0 * * 7",
    "*/0 * * * *", "5-1 * * * *", "1-2-3 * * * *", "*/5/2 * * * *", "a * * * *", "-1 * * * *", "0 0 * * MONDAY",
    "0 0 * * 1-SUN", "@every", "@reboot", "1.5 * * * *", "0x1 * * * *", "5/ * * * *", "/5 * * * *",
)  # fmt: skip

export { nextRunAt, ScheduleError, wallTimeOn, type FrequencyUnit, type Schedule } from './next-run';

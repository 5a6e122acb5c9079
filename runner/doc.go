// Package runner turns a campaign file into a validated plan and runs it:
// phases in dependency order, each step detached under a supervisor process
// in its own session and process group, with its output going straight to a
// log file.
//
// Promises:
//   - Load refuses a bad campaign file before anything is created on disk;
//     every refusal is a *FileError with file, line and column.
//   - Every transition is appended to a journal in the state dir and fsynced
//     before its event is published, so a new Runner on the same state dir
//     resumes: finished phases are kept, live steps and services re-adopted.
//   - Events are delivered to every subscriber in order and never dropped;
//     a subscriber must read until its channel is closed, which happens
//     after the Detached event that Close publishes. CampaignFinished does
//     not close it: a finished phase can still be retried.
//   - Results are read as soon as a step writes them: the step's folder is
//     watched with fsnotify; everything else is looked at once a second.
//   - Steps outlive the Runner: only Stop, Skip and timeouts signal them.
//
// runner imports nothing else of greenlight.
package runner

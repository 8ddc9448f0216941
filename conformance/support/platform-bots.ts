// The bots the driver's platform fakes know (conformance/driver/platforms.ts), so that a run
// against the real server connects them for real; against any other server they are refused
// (400) or the platform is unreachable (502), which the contract allows too.
export const PLATFORM_BOTS = {
  forum: { token: "MTE4NDIxMzU5NzMxMDQ1OTkwNA.GhT2xq.conformance", guildId: "884213597310459904", channelId: "884213597310459907" },
  messenger: { token: "7310459904:AAHf3kq9ZpXconformance" },
  workspace: { token: "xoxb-4102938475-conformance", workspaceId: "T04A7QX2M9", channelId: "C05B8RY3N1", signingSecret: "conformance-signing-secret-0001" },
} as const;

-- LÖVE's configuration of the example: a small window, no audio (a game
-- that runs under xvfb-run on a server has no sound card either).
function love.conf(t)
  t.identity = "unsandbox-example"
  t.version = "11.4"
  t.window.title = "unsandbox in LÖVE"
  t.window.width, t.window.height = 640, 360
  t.window.vsync = 0          -- frames as fast as the game can draw them: what is measured
  t.modules.audio = false
  t.modules.sound = false
  t.modules.joystick = false
  t.modules.physics = false
end
